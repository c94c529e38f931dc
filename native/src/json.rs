//! MySQL binary JSON (``json_binary::parse_binary``, sql/json_binary.cc) straight to MySQL's text
//! (``wrapper_to_string``, sql/json_dom.cc), as ``binlake.mysqljson.decoder`` + ``binlake.mysqljson.text`` do.
//!
//! ``Err(())`` means the Python decoder raises for this cell; the caller then asks it for the typed error.
//! Every offset is checked against its container the way the Python decoder checks it, so both accept and
//! reject the same cells.

use crate::fmt::{base64, decimal_size, mysql_double};
use std::fmt::Write;

type R = Result<(), ()>;

const MAX_DEPTH: u32 = 100;

pub fn json_text(buf: &[u8], out: &mut String) -> R {
    if buf.is_empty() {
        out.push_str("null");
        return Ok(());
    }
    value(buf[0], buf, 1, buf.len(), 0, out)
}

fn read_variable_length(buf: &[u8], pos: usize, limit: usize) -> Result<(usize, usize), ()> {
    let mut length: u64 = 0;
    for i in 0..5 {
        if pos + i >= limit {
            return Err(());
        }
        let byte = buf[pos + i];
        length |= ((byte & 0x7F) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            if length > 0xFFFF_FFFF {
                return Err(());
            }
            return Ok((length as usize, pos + i + 1));
        }
    }
    Err(())
}

fn le(buf: &[u8], pos: usize, n: usize) -> u64 {
    let mut v = 0u64;
    for k in (0..n).rev() {
        v = v << 8 | buf[pos + k] as u64;
    }
    v
}

fn string(bytes: &[u8], out: &mut String) -> R {
    let s = std::str::from_utf8(bytes).map_err(|_| ())?;
    quote(s, out);
    Ok(())
}

/// ``json.encoder.encode_basestring`` (what ``binlake.mysqljson.text`` uses for MySQL's ``double_quote``).
fn quote(s: &str, out: &mut String) {
    let mut v = Vec::with_capacity(s.len() + 2);
    crate::fmt::json_string(s, false, &mut v);
    out.push_str(unsafe { std::str::from_utf8_unchecked(&v) });
}

fn value(t: u8, buf: &[u8], pos: usize, limit: usize, depth: u32, out: &mut String) -> R {
    match t {
        0x0C => {
            let (len, start) = read_variable_length(buf, pos, limit)?;
            let end = start.checked_add(len).ok_or(())?;
            if end > limit {
                return Err(());
            }
            string(&buf[start..end], out)
        }
        0..=3 => container(t, buf, pos, limit, depth + 1, out),
        0x05..=0x0B => {
            let size = match t {
                0x05 | 0x06 => 2,
                0x07 | 0x08 => 4,
                _ => 8,
            };
            if pos + size > limit {
                return Err(());
            }
            let raw = le(buf, pos, size);
            match t {
                0x05 => write!(out, "{}", raw as u16 as i16),
                0x06 => write!(out, "{}", raw as u16),
                0x07 => write!(out, "{}", raw as u32 as i32),
                0x08 => write!(out, "{}", raw as u32),
                0x09 => write!(out, "{}", raw as i64),
                0x0A => write!(out, "{}", raw),
                _ => {
                    mysql_double(f64::from_bits(raw), out);
                    Ok(())
                }
            }
            .map_err(|_| ())
        }
        0x04 => {
            if pos >= limit {
                return Err(());
            }
            literal(buf[pos], out)
        }
        0x0F => {
            if pos >= limit {
                return Err(());
            }
            let ft = buf[pos];
            let (len, start) = read_variable_length(buf, pos + 1, limit)?;
            let end = start.checked_add(len).ok_or(())?;
            if end > limit {
                return Err(());
            }
            opaque(ft, &buf[start..end], out)
        }
        _ => Err(()),
    }
}

fn literal(b: u8, out: &mut String) -> R {
    out.push_str(match b {
        0 => "null",
        1 => "true",
        2 => "false",
        _ => return Err(()),
    });
    Ok(())
}

const POW10: [u64; 10] = [
    1,
    10,
    100,
    1000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];
const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/// ``opaque_value`` + its text: DECIMAL (``Json_decimal::convert_from_binary``), temporals
/// (``TIME_from_longlong_packed``), VAR_STRING as text, anything else as ``base64:typeNN:...``.
fn opaque(ft: u8, data: &[u8], out: &mut String) -> R {
    match ft {
        246 => {
            if data.len() < 2 {
                return Err(());
            }
            let (p, s) = (data[0] as u32, data[1] as u32);
            if !(p > 0 && s <= 30 && s <= p) || decimal_size(p, s) != data.len() - 2 {
                return Err(());
            }
            let mut raw = data[2..].to_vec();
            let negative = raw[0] & 0x80 == 0;
            raw[0] ^= 0x80;
            if negative {
                raw.iter_mut().for_each(|b| *b ^= 0xFF);
            }
            let intg = p - s;
            let mut int_groups = Vec::new();
            if intg % 9 > 0 {
                int_groups.push(intg % 9);
            }
            int_groups.extend(std::iter::repeat_n(9, (intg / 9) as usize));
            let mut frac_groups: Vec<u32> = std::iter::repeat_n(9, (s / 9) as usize).collect();
            if s % 9 > 0 {
                frac_groups.push(s % 9);
            }
            let mut at = 0;
            let mut int_text = String::new();
            let mut frac_text = String::new();
            for (k, &digits) in int_groups.iter().chain(frac_groups.iter()).enumerate() {
                let n = if digits == 9 {
                    4
                } else {
                    DIG2BYTES[digits as usize]
                };
                let mut word = 0u64;
                for &b in &raw[at..at + n] {
                    word = word << 8 | b as u64;
                }
                at += n;
                if word >= POW10[digits as usize] {
                    return Err(());
                }
                let target = if k < int_groups.len() {
                    &mut int_text
                } else {
                    &mut frac_text
                };
                let _ = write!(target, "{:0width$}", word, width = digits as usize);
            }
            if negative {
                out.push('-');
            }
            let trimmed = int_text.trim_start_matches('0');
            out.push_str(if trimmed.is_empty() { "0" } else { trimmed });
            if !frac_groups.is_empty() {
                out.push('.');
                out.push_str(&frac_text);
            }
            Ok(())
        }
        7 | 10 | 11 | 12 => {
            if data.len() != 8 {
                return Err(());
            }
            let packed = le(data, 0, 8) as i64 as i128;
            let mut text = String::new();
            if ft == 11 {
                let tmp = packed.abs();
                let hms = tmp >> 24;
                let _ = write!(
                    text,
                    "{}{:02}:{:02}:{:02}.{:06}",
                    if packed < 0 { "-" } else { "" },
                    (hms >> 12) % 1024,
                    (hms >> 6) % 64,
                    hms % 64,
                    tmp % (1 << 24)
                );
            } else {
                if packed < 0 {
                    return Err(());
                }
                let micro = packed % (1 << 24);
                let ymdhms = packed >> 24;
                let ymd = ymdhms >> 17;
                let ym = ymd >> 5;
                let hms = ymdhms % (1 << 17);
                let _ = write!(text, "{:04}-{:02}-{:02}", ym / 13, ym % 13, ymd % 32);
                if ft != 10 {
                    let _ = write!(
                        text,
                        " {:02}:{:02}:{:02}.{:06}",
                        hms >> 12,
                        (hms >> 6) % 64,
                        hms % 64,
                        micro
                    );
                }
            }
            quote(&text, out);
            Ok(())
        }
        253 => {
            quote(&String::from_utf8_lossy(data), out);
            Ok(())
        }
        _ => {
            let mut text = format!("base64:type{}:", ft);
            base64(data, &mut text);
            quote(&text, out);
            Ok(())
        }
    }
}

fn container(t: u8, buf: &[u8], base: usize, limit: usize, depth: u32, out: &mut String) -> R {
    if depth > MAX_DEPTH {
        return Err(());
    }
    let large = t & 1 == 1;
    let (hsize, osize) = if large { (8usize, 4usize) } else { (4, 2) };
    if base + hsize > limit {
        return Err(());
    }
    let count = le(buf, base, osize) as usize;
    let size = le(buf, base + osize, osize) as usize;
    if size < hsize {
        return Err(());
    }
    let end = (base + size).min(limit);
    let pos = base + hsize;
    let vesize = 1 + osize;
    let is_object = t <= 1;
    let mut keys: Vec<&str> = Vec::new();
    let entries_at;
    if is_object {
        let kesize = osize + 2;
        entries_at = pos + count * kesize;
        let values_end = entries_at + count * vesize;
        if values_end > end {
            return Err(());
        }
        keys.reserve(count);
        for i in 0..count {
            let e = pos + i * kesize;
            let start = base + le(buf, e, osize) as usize;
            let len = le(buf, e + osize, 2) as usize;
            if start < values_end || start + len > end {
                return Err(());
            }
            keys.push(std::str::from_utf8(&buf[start..start + len]).map_err(|_| ())?);
        }
    } else {
        entries_at = pos;
        if pos + count * vesize > end {
            return Err(());
        }
    }
    let element = |i: usize, out: &mut String| -> R {
        let e = entries_at + i * vesize;
        let vtype = buf[e];
        let voff = le(buf, e + 1, osize);
        let entry_end = e + vesize;
        match vtype {
            0x05 => {
                let _ = write!(out, "{}", voff as u16 as i16);
                return Ok(());
            }
            0x06 => {
                let _ = write!(out, "{}", voff as u16);
                return Ok(());
            }
            0x04 => return literal((voff & 0xFF) as u8, out),
            0x07 if large => {
                let _ = write!(out, "{}", voff as u32 as i32);
                return Ok(());
            }
            0x08 if large => {
                let _ = write!(out, "{}", voff as u32);
                return Ok(());
            }
            _ => {}
        }
        let start = base + voff as usize;
        if start < entry_end || start >= end {
            return Err(());
        }
        value(vtype, buf, start, end, depth, out)
    };
    // an object's duplicate key keeps its first position and its last value (Python's dict(zip(keys, values)))
    let duplicates = is_object && count > 1 && {
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.windows(2).any(|w| w[0] == w[1])
    };
    if duplicates {
        let mut texts = Vec::with_capacity(count);
        for i in 0..count {
            let mut s = String::new();
            element(i, &mut s)?;
            texts.push(s);
        }
        let mut order: Vec<usize> = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            match order.iter().position(|&j| keys[j] == *k) {
                Some(slot) => order[slot] = i,
                None => order.push(i),
            }
        }
        out.push('{');
        for (n, &i) in order.iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            quote(keys[i], out);
            out.push_str(": ");
            out.push_str(&texts[i]);
        }
        out.push('}');
        return Ok(());
    }
    out.push(if is_object { '{' } else { '[' });
    #[allow(clippy::needless_range_loop)] // i indexes keys and the values' offsets alike
    for i in 0..count {
        if i > 0 {
            out.push_str(", ");
        }
        if is_object {
            quote(keys[i], out);
            out.push_str(": ");
        }
        element(i, out)?;
    }
    out.push(if is_object { '}' } else { ']' });
    Ok(())
}
