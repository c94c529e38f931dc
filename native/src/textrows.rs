//! ``binlake snapshot``'s row reader: the rows of a MySQL text-protocol result set (``Protocol::ResultsetRow``:
//! one packet per row, each value a length-encoded string or 0xFB for NULL; the set ends with an EOF packet,
//! or an ERR packet when the statement fails), read from the connection PyMySQL opened, typed as silver types
//! them (``binlake.snapshot.columns``), in Arrow batches.
//!
//! A value is typed here only when its text has the form the server prints (``-123``, ``12.50``,
//! ``2024-03-01 10:00:00.5``, valid UTF-8); a column of a batch holding any other value (a zero date, text in
//! another form) comes back as the values' bytes, and Python's converters type it, so values, counts and
//! errors are exactly those of the Python reader. Each row's fingerprint (``ServerSession.fingerprint``: MD5
//! of the snapshot's key and the length-prefixed values) is computed here, so a chunk needs no second pass on
//! the server.

use crate::arrow::{capsules, struct_node, Col};
use crate::fmt::{days_from_civil, typed_date, typed_datetime, valid_date};
use md5::{Digest, Md5};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

create_exception!(
    binlake_native,
    ServerError,
    PyException,
    "An ERR packet in a result set: args (payload,)."
);
create_exception!(
    binlake_native,
    ProtocolError,
    PyException,
    "A result set that breaks the protocol: args (message, lost)."
);

/// A packet this long continues in the next one (``MAX_PACKET_LENGTH``).
const MAX_PACKET: usize = 0xFF_FFFF;
/// Bytes asked of the connection's buffered reader at a time.
const READ_SIZE: usize = 1 << 18;
const NULL: usize = usize::MAX;

/// How a column's text becomes its silver value.
#[derive(Clone, Copy)]
enum Parse {
    Int(i64, i64),
    Decimal(u32, u32),
    Double,
    Float,
    Utf8,
    Ascii,
    Bytes,
    Date,
    Timestamp,
    Raw,
}

/// ``(Parse, Arrow format)`` of a kind ``binlake.snapshot.columns`` names.
fn parse_of(kind: &str) -> Option<(Parse, String)> {
    let int = |lo: i64, hi: i64, f: &str| Some((Parse::Int(lo, hi), f.to_string()));
    match kind {
        "int8" => int(i8::MIN as i64, i8::MAX as i64, "c"),
        "int16" => int(i16::MIN as i64, i16::MAX as i64, "s"),
        "int32" => int(i32::MIN as i64, i32::MAX as i64, "i"),
        "int64" => int(i64::MIN, i64::MAX, "l"),
        "double" => Some((Parse::Double, "g".into())),
        "float" => Some((Parse::Float, "f".into())),
        "utf8" => Some((Parse::Utf8, "u".into())),
        "ascii" => Some((Parse::Ascii, "u".into())),
        "bytes" => Some((Parse::Bytes, "z".into())),
        "date" => Some((Parse::Date, "tdD".into())),
        "timestamp" => Some((Parse::Timestamp, "tsu:".into())),
        "timestamp_utc" => Some((Parse::Timestamp, "tsu:UTC".into())),
        "raw" => Some((Parse::Raw, "z".into())),
        _ => {
            let (p, s) = kind.strip_prefix("decimal:")?.split_once(',')?;
            let (p, s): (u32, u32) = (p.parse().ok()?, s.parse().ok()?);
            (s <= p && p <= 38).then(|| (Parse::Decimal(p, s), format!("d:{p},{s}")))
        }
    }
}

/// The server's text of an integer: ``-``, then digits.
fn int_text(s: &[u8], lo: i64, hi: i64) -> Option<i64> {
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = digits
        .iter()
        .fold(0i128, |v, &b| v * 10 + (b - b'0') as i128);
    let v = if neg { -v } else { v };
    (lo as i128 <= v && v <= hi as i128).then_some(v as i64)
}

/// The server's text of a DECIMAL(precision, scale): ``-``, digits, ``.`` and at most ``scale`` digits; the
/// unscaled value, None when it does not fit.
fn decimal_text(s: &[u8], precision: u32, scale: u32) -> Option<i128> {
    let (neg, s) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    let (whole, frac) = match s.iter().position(|&b| b == b'.') {
        Some(i) if i + 1 < s.len() => (&s[..i], &s[i + 1..]),
        Some(_) => return None,
        None => (s, &s[..0]),
    };
    if whole.is_empty() || frac.len() > scale as usize {
        return None;
    }
    if !whole.iter().chain(frac).all(u8::is_ascii_digit) {
        return None;
    }
    let significant = whole.iter().skip_while(|&&b| b == b'0').count();
    if significant + scale as usize > precision as usize {
        return None;
    }
    let digits = whole.iter().skip_while(|&&b| b == b'0').chain(frac);
    let mut v = digits.fold(0i128, |v, &b| v * 10 + (b - b'0') as i128);
    for _ in frac.len()..scale as usize {
        v *= 10;
    }
    Some(if neg { -v } else { v })
}

/// The server's text of a DOUBLE (digits, sign, point, exponent): the nearest double, as Python's ``float``.
fn double_text(s: &[u8]) -> Option<f64> {
    let number = |b: &u8| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E');
    if s.is_empty() || !s.iter().all(number) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// The digits ``s[a..b]`` as a number; None unless all are ASCII digits.
fn digits(s: &[u8], a: usize, b: usize) -> Option<i64> {
    s[a..b].iter().try_fold(0i64, |v, &c| {
        c.is_ascii_digit().then(|| v * 10 + (c - b'0') as i64)
    })
}

/// ``YYYY-MM-DD``, the form the server prints: days since the epoch (None for any other text, or an invalid
/// date: ``typed_date`` decides those).
fn date_text(s: &[u8]) -> Option<i64> {
    if s.len() != 10 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let (y, m, d) = (digits(s, 0, 4)?, digits(s, 5, 7)?, digits(s, 8, 10)?);
    valid_date(y, m, d).then(|| days_from_civil(y, m, d))
}

/// ``YYYY-MM-DD HH:MM:SS[.f...]`` (1 to 6 fraction digits), the form the server prints: microseconds since the
/// epoch (None for any other text, or an invalid value: ``typed_datetime`` decides those).
fn datetime_text(s: &[u8]) -> Option<i64> {
    if s.len() < 19 || s[10] != b' ' || s[13] != b':' || s[16] != b':' {
        return None;
    }
    let days = date_text(&s[..10])?;
    let (h, mi, sec) = (digits(s, 11, 13)?, digits(s, 14, 16)?, digits(s, 17, 19)?);
    let us = match s.len() {
        19 => 0,
        21..=26 if s[19] == b'.' => digits(s, 20, s.len())? * 10i64.pow(26 - s.len() as u32),
        _ => return None,
    };
    (h < 24 && mi < 60 && sec < 60)
        .then(|| (days * 86400 + h * 3600 + mi * 60 + sec) * 1_000_000 + us)
}

/// One value of column ``parse`` into ``col``; false when its text is not in the form typed here.
fn put(col: &mut Col, parse: Parse, v: &[u8]) -> bool {
    match parse {
        Parse::Int(lo, hi) => int_text(v, lo, hi).map(|x| col.int(x)).is_some(),
        Parse::Decimal(p, s) => decimal_text(v, p, s).map(|x| col.decimal(x)).is_some(),
        Parse::Double => double_text(v).map(|x| col.double(x)).is_some(),
        Parse::Float => match double_text(v) {
            // struct.pack("<f") rounds to nearest and refuses what overflows
            Some(x) if (x as f32).is_finite() || !x.is_finite() => {
                col.float(x as f32);
                true
            }
            _ => false,
        },
        Parse::Utf8 if std::str::from_utf8(v).is_err() => false,
        Parse::Ascii if !v.is_ascii() => false,
        Parse::Raw => false,
        Parse::Utf8 | Parse::Ascii | Parse::Bytes => {
            col.bytes(v);
            true
        }
        Parse::Date => date_text(v)
            .or_else(|| typed_date(v).map(i64::from))
            .map(|x| col.int(x))
            .is_some(),
        Parse::Timestamp => datetime_text(v)
            .or_else(|| typed_datetime(v))
            .map(|x| col.int(x))
            .is_some(),
    }
}

/// One result set's rows, pulled in batches by ``ServerSession.read_native`` (sendable: a traceback may hold it
/// until another thread drops it).
#[pyclass]
pub struct TextRows {
    rfile: PyObject,
    buf: Vec<u8>,
    pos: usize,
    seq: u8,
    names: Vec<String>,
    parses: Vec<(Parse, String)>,
    key: Option<Vec<u8>>,
    last: Vec<usize>,
    ended: bool,
}

impl TextRows {
    /// At least ``need`` unread bytes in ``buf``.
    fn fill(&mut self, py: Python<'_>, need: usize) -> PyResult<()> {
        while self.buf.len() - self.pos < need {
            self.buf.drain(..self.pos);
            self.pos = 0;
            let got =
                self.rfile
                    .call_method1(py, "read1", (READ_SIZE.max(need - self.buf.len()),))?;
            let got = got.downcast_bound::<PyBytes>(py)?.as_bytes();
            if got.is_empty() {
                return Err(ProtocolError::new_err((
                    "the server closed the connection in the middle of a result",
                    true,
                )));
            }
            self.buf.extend_from_slice(got);
        }
        Ok(())
    }

    /// The next packet's payload (joined with its continuations), appended to ``out``.
    fn packet(&mut self, py: Python<'_>, out: &mut Vec<u8>) -> PyResult<()> {
        loop {
            self.fill(py, 4)?;
            let h = &self.buf[self.pos..self.pos + 4];
            let len = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
            if h[3] != self.seq {
                // MariaDB's error at shutdown comes with sequence number 0
                let lost = h[3] == 0;
                return Err(ProtocolError::new_err((
                    format!(
                        "packet sequence number {} where {} was expected",
                        h[3], self.seq
                    ),
                    lost,
                )));
            }
            self.seq = self.seq.wrapping_add(1);
            self.pos += 4;
            self.fill(py, len)?;
            out.extend_from_slice(&self.buf[self.pos..self.pos + len]);
            self.pos += len;
            if len < MAX_PACKET {
                return Ok(());
            }
        }
    }
}

/// The cells (start, length or NULL) of the row packet ``data[start..]``.
fn split_row(
    data: &[u8],
    start: usize,
    n: usize,
    cells: &mut Vec<(usize, usize)>,
) -> Result<usize, String> {
    let mut at = start;
    let mut held = 0;
    for c in 0..n {
        let Some(&first) = data.get(at) else {
            return Err(format!("a row ended after {c} of {n} value(s)"));
        };
        let (head, len) = match first {
            0xFB => (1, NULL),
            b if b < 0xFB => (1, b as usize),
            0xFC..=0xFE => {
                let width = [2usize, 3, 8][(first - 0xFC) as usize];
                let Some(raw) = data.get(at + 1..at + 1 + width) else {
                    return Err(format!("value {} of a row is cut in its length", c + 1));
                };
                let len = raw.iter().rev().fold(0u64, |v, &b| v << 8 | b as u64);
                (1 + width, usize::try_from(len).unwrap_or(NULL - 1))
            }
            _ => return Err(format!("value {} of a row has the length byte 0xFF", c + 1)),
        };
        at += head;
        cells.push((at, len));
        if len != NULL {
            if len > data.len() - at {
                return Err(format!(
                    "value {} of a row is longer than its packet",
                    c + 1
                ));
            }
            at += len;
            held += len;
        }
    }
    if at != data.len() {
        return Err(format!("a row holds more than {n} value(s)"));
    }
    Ok(held)
}

/// XOR of each row's MD5 over ``key`` and its values as ``length:value`` (``N`` for NULL), in two halves.
fn fingerprint(key: &[u8], data: &[u8], cells: &[(usize, usize)], n: usize) -> (u64, u64) {
    let (mut fa, mut fb) = (0u64, 0u64);
    let mut digits = [0u8; 20];
    let mut message = Vec::new();
    for row in cells.chunks(n) {
        message.clear();
        message.extend_from_slice(key);
        for &(at, len) in row {
            if len == NULL {
                message.push(b'N');
            } else {
                message.extend_from_slice(itoa(len, &mut digits));
                message.push(b':');
                message.extend_from_slice(&data[at..at + len]);
            }
        }
        let d = Md5::digest(&message);
        fa ^= u64::from_be_bytes(d[..8].try_into().unwrap());
        fb ^= u64::from_be_bytes(d[8..].try_into().unwrap());
    }
    (fa, fb)
}

/// The decimal digits of ``v``.
fn itoa(mut v: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &buf[i..];
        }
    }
}

/// The Arrow columns of ``rows`` rows' cells, and the indexes of those given as their values' bytes.
fn columns(
    names: &[String],
    parses: &[(Parse, String)],
    data: &[u8],
    cells: &[(usize, usize)],
    rows: usize,
) -> (Vec<crate::arrow::Node>, Vec<usize>) {
    let n = names.len();
    let value = |(at, len): (usize, usize)| (len != NULL).then(|| &data[at..at + len]);
    let mut cols = Vec::with_capacity(n);
    let mut raw = Vec::new();
    for c in 0..n {
        let (parse, format) = parses[c].clone();
        let mut col = Col::new(&names[c], format);
        let typed = (0..rows).all(|r| match value(cells[r * n + c]) {
            None => {
                col.null();
                true
            }
            Some(v) => put(&mut col, parse, v),
        });
        if !typed {
            raw.push(c);
            col = Col::new(&names[c], "z".into());
            (0..rows).for_each(|r| col.opt_str(value(cells[r * n + c])));
        }
        cols.push(col.node());
    }
    (cols, raw)
}

#[pymethods]
impl TextRows {
    /// ``rfile``: the connection's buffered reader, right after the result's column definitions; ``seq``: the
    /// next packet's sequence number; ``columns``: (name, kind) in SELECT order; ``key``: the fingerprint key
    /// (None: no fingerprint); ``last``: the indexes of the columns whose last values a batch gives.
    #[new]
    fn new(
        rfile: PyObject,
        seq: u8,
        columns: Vec<(String, String)>,
        key: Option<Vec<u8>>,
        last: Vec<usize>,
    ) -> PyResult<Self> {
        let mut names = Vec::new();
        let mut parses = Vec::new();
        for (name, kind) in columns {
            let parse = parse_of(&kind)
                .ok_or_else(|| PyValueError::new_err(format!("unknown kind {kind:?}")))?;
            names.push(name);
            parses.push(parse);
        }
        if names.is_empty() || last.iter().any(|&c| c >= names.len()) {
            return Err(PyValueError::new_err(
                "a result of no columns, or a last column it does not have",
            ));
        }
        Ok(TextRows {
            rfile,
            buf: Vec::new(),
            pos: 0,
            seq,
            names,
            parses,
            key,
            last,
            ended: false,
        })
    }

    /// The next sequence number (the connection's, once the result has ended).
    #[getter]
    fn seq(&self) -> u8 {
        self.seq
    }

    /// Up to ``max_rows`` rows, fewer once their values hold ``max_bytes``: (capsules of a struct array,
    /// rows, indexes of the columns given as their values' bytes, the rows' fingerprint halves XORed (0
    /// without a key), the last row's ``last`` values as bytes); None once the result has ended.
    fn batch<'py>(
        &mut self,
        py: Python<'py>,
        max_rows: usize,
        max_bytes: usize,
    ) -> PyResult<
        Option<(
            Bound<'py, PyTuple>,
            usize,
            Vec<usize>,
            u64,
            u64,
            Vec<Option<Bound<'py, PyBytes>>>,
        )>,
    > {
        let n = self.names.len();
        let (mut data, mut cells) = (Vec::new(), Vec::new());
        let (mut rows, mut held) = (0usize, 0usize);
        while rows < max_rows.max(1) && held < max_bytes && !self.ended {
            let start = data.len();
            self.packet(py, &mut data)?;
            match data.get(start) {
                Some(0xFE) if data.len() - start < 9 => {
                    self.ended = true;
                    data.truncate(start);
                    break;
                }
                Some(0xFF) => {
                    return Err(ServerError::new_err((
                        PyBytes::new(py, &data[start..]).unbind(),
                    )))
                }
                _ => {}
            }
            held += split_row(&data, start, n, &mut cells).map_err(|m| {
                ProtocolError::new_err((format!("{m} (expected rows of {n} value(s))"), false))
            })?;
            rows += 1;
        }
        if rows == 0 {
            return Ok(None);
        }
        // hashing and typing need no Python: the thread writing the previous batch's Parquet runs meanwhile
        let (names, parses, key) = (&self.names, &self.parses, self.key.as_deref());
        let (cols, raw, (fa, fb)) = py.allow_threads(|| {
            let halves = key.map_or((0, 0), |key| fingerprint(key, &data, &cells, n));
            let (cols, raw) = columns(names, parses, &data, &cells, rows);
            (cols, raw, halves)
        });
        let value = |(at, len): (usize, usize)| (len != NULL).then(|| &data[at..at + len]);
        let at_end = &cells[(rows - 1) * n..];
        let last = self
            .last
            .iter()
            .map(|&c| value(at_end[c]).map(|v| PyBytes::new(py, v)))
            .collect();
        Ok(Some((
            capsules(py, struct_node(cols, rows))?,
            rows,
            raw,
            fa,
            fb,
            last,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_in_the_servers_form_and_range_only() {
        assert_eq!(int_text(b"-128", -128, 127), Some(-128));
        assert_eq!(int_text(b"007", -128, 127), Some(7));
        for bad in [&b"128"[..], b"+1", b" 1", b"", b"-", b"1_0", b"1e3"] {
            assert_eq!(int_text(bad, -128, 127), None, "{bad:?}");
        }
        assert_eq!(
            int_text(b"-9223372036854775808", i64::MIN, i64::MAX),
            Some(i64::MIN)
        );
    }

    #[test]
    fn decimals_scaled_and_bounded_by_precision() {
        assert_eq!(decimal_text(b"-1234567890.12", 12, 2), Some(-123456789012));
        assert_eq!(decimal_text(b"5.5", 12, 2), Some(550));
        assert_eq!(decimal_text(b"0007.00", 3, 2), Some(700));
        assert_eq!(
            decimal_text(b"18446744073709551615", 20, 0),
            Some(18446744073709551615)
        );
        for bad in [
            &b"1.234"[..],
            b"12345678901.00",
            b".5",
            b"5.",
            b"1e5",
            b"-",
            b"",
            b"+1",
        ] {
            assert_eq!(decimal_text(bad, 12, 2), None, "{bad:?}");
        }
    }

    #[test]
    fn the_fast_temporal_forms_agree_with_the_python_mirrors() {
        for t in [
            &b"2024-02-29 23:59:59.5"[..],
            b"1969-12-31 23:59:59.999999",
            b"0001-01-01 00:00:00",
            b"9999-12-31 23:59:59.123",
        ] {
            assert_eq!(datetime_text(t), typed_datetime(t), "{t:?}");
            assert!(datetime_text(t).is_some());
        }
        for t in [
            &b"0000-00-00 00:00:00"[..],
            b"2023-02-29 00:00:00",
            b"2024-01-01 24:00:00",
            b"2024-01-01 10:00:00.",
        ] {
            assert_eq!(datetime_text(t), None, "{t:?}");
        }
        for t in [&b"2024-02-29"[..], b"1000-01-01", b"1969-12-31"] {
            assert_eq!(date_text(t), typed_date(t).map(i64::from), "{t:?}");
        }
        assert_eq!(date_text(b"2024-01-01x"), None); // typed_date decides (it reads the first 10 bytes)
    }

    #[test]
    fn rows_split_into_cells_or_say_what_is_wrong() {
        let mut cells = Vec::new();
        assert_eq!(split_row(b"\x01a\xfb\x00", 0, 3, &mut cells), Ok(1));
        assert_eq!(cells, vec![(1, 1), (3, NULL), (4, 0)]);
        assert!(split_row(b"\x01a", 0, 2, &mut Vec::new())
            .unwrap_err()
            .contains("after 1 of 2"));
        assert!(split_row(b"\x01a\x01b", 0, 1, &mut Vec::new())
            .unwrap_err()
            .contains("more than 1"));
        assert!(split_row(b"\xfc\x05", 0, 1, &mut Vec::new())
            .unwrap_err()
            .contains("cut"));
    }
}
