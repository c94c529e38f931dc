//! One decoded value in the two forms binlake hands on: the ``binlake rows`` JSON encoding
//! (``binlake.binlog.render.json_value``) and MySQL's text of it; plus the Python value a render error is
//! reproduced with.

use crate::fmt;
use crate::layout::{Column, Kind};
use crate::rows::{cp1252, Decoded, Val};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

/// Why a value has no JSON form: the Python decoder's ``json_value`` raises for it (non-finite numbers,
/// JSON documents that do not decode).
pub struct BadValue;

/// Append the name bytes of an ENUM index (``""`` for 0) or the comma-joined members of a SET mask.
pub fn enum_set_bytes(col: &Column, v: &Val, out: &mut Vec<u8>) {
    match (v, &col.kind) {
        (Val::Enum(i), Kind::Enum { names: Some(n), .. }) if *i > 0 => {
            out.extend_from_slice(&n[*i as usize - 1]);
        }
        (Val::Set(m), Kind::Set { names: Some(n), .. }) => {
            let mut first = true;
            for (k, name) in n.iter().enumerate() {
                if k < 64 && m >> k & 1 == 1 {
                    if !first {
                        out.push(b',');
                    }
                    first = false;
                    out.extend_from_slice(name);
                }
            }
        }
        _ => {}
    }
}

/// A BIT value's decimal digits (any width).
pub fn bit_digits(raw: &[u8]) -> String {
    if raw.len() <= 8 {
        raw.iter().fold(0u64, |v, &b| v << 8 | b as u64).to_string()
    } else {
        fmt::BigDec::from_be_bytes(raw).digits()
    }
}

/// The text of a temporal, DECIMAL or TIME value (what ``str()`` of the Python value prints).
pub fn text_of(v: &Val, out: &mut String) -> bool {
    match *v {
        Val::Decimal(raw, p, s) => {
            let (neg, coef) = fmt::decimal_value(raw, p as u32, s as u32);
            fmt::decimal_text(neg, &coef, s as u32, out);
        }
        Val::Date(y, m, d) => fmt::date_text(y as u64, m as u64, d as u64, out),
        Val::DateTime {
            y,
            mo,
            d,
            h,
            mi,
            s,
            us,
            fsp,
        } => fmt::datetime_text(
            y as u64, mo as u64, d as u64, h as u64, mi as u64, s as u64, us as u64, fsp, out,
        ),
        Val::Timestamp { secs, us, fsp } => fmt::timestamp_text(secs as u64, us as u64, fsp, out),
        Val::Time {
            neg,
            h,
            m,
            s,
            us,
            fsp,
        } => fmt::time_text(neg, h as u64, m as u64, s as u64, us as u64, fsp, out),
        _ => return false,
    }
    true
}

/// Text a column holds as a JSON string or a silver string: ``Ok(utf8)``, or ``Err(raw)`` for bytes that are
/// not UTF-8 (the ``{"hex": ...}`` case).
pub fn text_bytes<'a>(
    v: &Val<'a>,
    col: &Column,
    d: &'a Decoded,
    scratch: &'a mut Vec<u8>,
) -> Option<Result<&'a [u8], &'a [u8]>> {
    let raw: &[u8] = match v {
        Val::Text(raw) => raw,
        Val::Cp1252(raw) => {
            scratch.clear();
            cp1252(raw, scratch);
            return Some(Ok(&scratch[..]));
        }
        Val::PyText(i) => return Some(Ok(d.texts[*i].as_bytes())),
        Val::Enum(_) | Val::Set(_) => {
            scratch.clear();
            enum_set_bytes(col, v, scratch);
            &scratch[..]
        }
        _ => return None,
    };
    Some(if std::str::from_utf8(raw).is_ok() {
        Ok(raw)
    } else {
        Err(raw)
    })
}

/// ``{"hex": "..."}`` of bytes (``compact``: without the space, as ``binlake.pipeline.fold.compact_json``).
pub fn push_hex_object(raw: &[u8], pad: usize, compact: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(if compact {
        b"{\"hex\":\""
    } else {
        b"{\"hex\": \""
    });
    fmt::hex(raw, out);
    for _ in raw.len()..pad {
        out.extend_from_slice(b"00");
    }
    out.extend_from_slice(b"\"}");
}

/// ``json.dumps(json_value(v))`` of one value; ``ascii``: ``ensure_ascii``; ``compact``: the separators of
/// ``binlake.pipeline.fold.compact_json`` (bronze) instead of ``json.dumps``'s.
pub fn json_value(
    v: &Val,
    col: &Column,
    d: &Decoded,
    ascii: bool,
    compact: bool,
    out: &mut Vec<u8>,
) -> Result<(), BadValue> {
    let mut s = String::new();
    match v {
        Val::Null => out.extend_from_slice(b"null"),
        Val::Int(x) => out.extend_from_slice(x.to_string().as_bytes()),
        Val::UInt(x) => out.extend_from_slice(x.to_string().as_bytes()),
        Val::Float(bits) => {
            let x = fmt::shortest_float32(*bits).unwrap_or(f64::NAN);
            if !x.is_finite() {
                return Err(BadValue);
            }
            fmt::py_float_repr(x, &mut s);
            out.extend_from_slice(s.as_bytes());
        }
        Val::Double(x) => {
            if !x.is_finite() {
                return Err(BadValue);
            }
            fmt::py_float_repr(*x, &mut s);
            out.extend_from_slice(s.as_bytes());
        }
        Val::Bit(raw) => out.extend_from_slice(bit_digits(raw).as_bytes()),
        Val::Bytes(raw) => push_hex_object(raw, 0, compact, out),
        Val::Padded(raw, n) => push_hex_object(raw, *n, compact, out),
        Val::Json(raw) => {
            crate::json::json_text(raw, &mut s).map_err(|_| BadValue)?;
            fmt::json_string(&s, ascii, out);
        }
        Val::Vector(raw) => {
            out.push(b'[');
            for (k, chunk) in raw.chunks_exact(4).enumerate() {
                let x = fmt::shortest_float32(u32::from_le_bytes([
                    chunk[0], chunk[1], chunk[2], chunk[3],
                ]))
                .unwrap_or(f64::NAN);
                if !x.is_finite() {
                    return Err(BadValue);
                }
                if k > 0 {
                    out.extend_from_slice(if compact { b"," } else { b", " });
                }
                s.clear();
                fmt::py_float_repr(x, &mut s);
                out.extend_from_slice(s.as_bytes());
            }
            out.push(b']');
        }
        Val::Partial(_) => out.extend_from_slice(b"null"),
        _ => {
            if text_of(v, &mut s) {
                fmt::json_string(&s, ascii, out);
            } else {
                let mut scratch = Vec::new();
                match text_bytes(v, col, d, &mut scratch) {
                    Some(Ok(t)) => fmt::json_str(t, ascii, out),
                    Some(Err(raw)) => push_hex_object(raw, 0, compact, out),
                    None => return Err(BadValue),
                }
            }
        }
    }
    Ok(())
}

/// The Python value whose ``json_value`` raises the error this value has (for the error's exact words).
pub fn py_value<'py>(py: Python<'py>, v: &Val) -> PyResult<(&'static str, Bound<'py, PyAny>)> {
    Ok(match v {
        Val::Float(bits) => (
            "float",
            fmt::shortest_float32(*bits)
                .unwrap_or(f64::NAN)
                .into_pyobject(py)?
                .into_any(),
        ),
        Val::Double(x) => ("float", x.into_pyobject(py)?.into_any()),
        Val::Vector(raw) => {
            let items: Vec<f64> = raw
                .chunks_exact(4)
                .map(|c| {
                    fmt::shortest_float32(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .unwrap_or(f64::NAN)
                })
                .collect();
            ("vector", PyTuple::new(py, items)?.into_any())
        }
        Val::Json(raw) => ("json", PyBytes::new(py, raw).into_any()),
        _ => ("other", py.None().into_bound(py)),
    })
}
