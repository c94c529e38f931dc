//! Text forms that must equal what the pure-Python decoder prints: Python's float ``repr`` (``json.dumps``),
//! ``shortest_float32`` (FLOAT columns), MySQL's ``my_gcvt`` (doubles in JSON documents), DECIMAL's
//! ``bin2decimal`` digits, MySQL temporal text (``my_*_to_str``), and JSON string escaping as ``json.dumps`` does.

use std::fmt::Write;

/// Shortest round-trip digits of a finite, non-negative double and its decimal point position
/// (``digits`` times 10^(decpt - len(digits))): of the shortest candidates the closest, ties to even (Ryu), as
/// ``repr`` and dtoa mode 0 choose them.
fn shortest_digits(x: f64) -> (String, i32) {
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(x);
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let all = format!("{}{}", int, frac);
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_matches('0').to_string();
    if digits.is_empty() {
        return ("0".into(), 1);
    }
    (digits, int.len() as i32 + exp - lead as i32)
}

/// ``repr(x)`` of a finite double (CPython ``float_repr``: 'r' format, exponent when decpt <= -4 or > 16).
pub fn py_float_repr(x: f64, out: &mut String) {
    if x.is_sign_negative() {
        out.push('-');
    }
    let (digits, decpt) = shortest_digits(x.abs());
    let (digits, decpt) = if digits.bytes().all(|b| b == b'0') {
        ("0".to_string(), 1)
    } else {
        (digits, decpt)
    };
    let n = digits.len() as i32;
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        let _ = write!(out, "e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..-decpt {
            out.push('0');
        }
        out.push_str(&digits);
    } else if decpt >= n {
        out.push_str(&digits);
        for _ in 0..(decpt - n) {
            out.push('0');
        }
        out.push_str(".0");
    } else {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    }
}

/// ``binlake.binlog.columns.shortest_float32``: the double with 6 to 9 significant digits that packs back to
/// the same float32. ``None`` when packing a candidate overflows (Python's struct raises there).
pub fn shortest_float32(bits: u32) -> Option<f64> {
    let value = f32::from_bits(bits) as f64;
    let round = |digits: usize| -> Option<(f64, bool)> {
        let cand: f64 = format!("{:.*e}", digits - 1, value)
            .parse()
            .unwrap_or(value);
        let packed = cand as f32;
        if packed.is_infinite() && cand.is_finite() {
            return None;
        }
        Some((cand, packed.to_bits() == bits))
    };
    if !value.is_finite() {
        return Some(value);
    }
    let (c7, ok7) = round(7)?;
    if ok7 {
        let (c6, ok6) = round(6)?;
        return Some(if ok6 { c6 } else { c7 });
    }
    let (c8, ok8) = round(8)?;
    if ok8 {
        return Some(c8);
    }
    Some(round(9)?.0)
}

/// ``binlake.mysqljson.text.format_double``: ``my_gcvt(x, MY_GCVT_ARG_DOUBLE, 34)`` plus ``.0``.
pub fn mysql_double(x: f64, out: &mut String) {
    if !x.is_finite() {
        out.push_str("0.0");
        return;
    }
    let start = out.len();
    let negative = x.is_sign_negative();
    let (mut digits, mut decpt) = shortest_digits(x.abs());
    if digits.bytes().all(|b| b == b'0') {
        digits = "0".into();
        decpt = 1;
    } else {
        let trimmed = digits.trim_end_matches('0').to_string();
        digits = trimmed;
    }
    const WIDTH_MAX: i32 = 34;
    const MAX_DECPT_FOR_F_FORMAT: i32 = 15;
    let width = WIDTH_MAX - if x < 0.0 { 1 } else { 0 };
    let length = digits.len() as i32;
    let f_len = if decpt <= 0 {
        length - decpt + 2
    } else if decpt < length {
        length + 1
    } else {
        decpt
    };
    let have_space = f_len <= width;
    let exp_len = 1 + (decpt >= 101 || decpt <= -99) as i32 + (decpt >= 11 || decpt <= -9) as i32;
    let force_e = decpt <= 0 && width <= 2 - decpt && width >= 3 + exp_len;
    // my_gcvt's condition as MySQL writes it (strings/dtoa.cc), its redundant `!force_e` included
    #[allow(clippy::overly_complex_bool_expr)]
    let use_f = (have_space
        || (decpt <= width
            && (decpt >= -1 || (decpt == -2 && (length > 1 || !force_e)))
            && !force_e))
        && (!have_space
            || (decpt > -MAX_DECPT_FOR_F_FORMAT
                && (decpt <= MAX_DECPT_FOR_F_FORMAT || length > decpt)));
    if negative {
        out.push('-');
    }
    if use_f {
        if decpt <= 0 {
            out.push_str("0.");
            for _ in 0..-decpt {
                out.push('0');
            }
            out.push_str(&digits);
        } else if decpt < length {
            out.push_str(&digits[..decpt as usize]);
            out.push('.');
            out.push_str(&digits[decpt as usize..]);
        } else {
            out.push_str(&digits);
            for _ in 0..(decpt - length) {
                out.push('0');
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if length > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}", decpt - 1);
    }
    let text = &out[start..];
    if !text.contains('.') && !text.contains('e') {
        out.push_str(".0");
    }
}

/// An unsigned integer in base 10^9 limbs (little-endian): DECIMAL digit groups joined by Horner's rule, with
/// the carries a corrupt group (>= 10^digits) makes, exactly as the Python decoder's arbitrary-size ints.
#[derive(Default)]
pub struct BigDec(Vec<u64>);

const LIMB: u64 = 1_000_000_000;

impl BigDec {
    pub fn mul_add(&mut self, mul: u64, add: u64) {
        let mut carry = add;
        for limb in self.0.iter_mut() {
            let v = *limb * mul + carry;
            *limb = v % LIMB;
            carry = v / LIMB;
        }
        while carry > 0 {
            self.0.push(carry % LIMB);
            carry /= LIMB;
        }
    }
    pub fn from_be_bytes(raw: &[u8]) -> BigDec {
        let mut b = BigDec::default();
        for &byte in raw {
            b.mul_add(256, byte as u64);
        }
        b
    }
    pub fn digits(&self) -> String {
        let mut limbs: Vec<u64> = self.0.clone();
        while limbs.len() > 1 && *limbs.last().unwrap() == 0 {
            limbs.pop();
        }
        match limbs.split_last() {
            None => "0".into(),
            Some((top, rest)) => {
                let mut s = top.to_string();
                for l in rest.iter().rev() {
                    let _ = write!(s, "{:09}", l);
                }
                s
            }
        }
    }
    pub fn to_i128(&self) -> Option<i128> {
        let mut v: i128 = 0;
        for &l in self.0.iter().rev() {
            v = v.checked_mul(LIMB as i128)?.checked_add(l as i128)?;
        }
        Some(v)
    }
}

const DIG2BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];

/// ``decimal_bin_size``.
pub fn decimal_size(precision: u32, scale: u32) -> usize {
    let intg = precision - scale;
    (intg / 9) as usize * 4
        + DIG2BYTES[(intg % 9) as usize]
        + (scale / 9) as usize * 4
        + DIG2BYTES[(scale % 9) as usize]
}

/// ``bin2decimal`` as ``binlake.binlog.columns.make_decimal`` reads it: (negative, coefficient); the value is
/// coefficient * 10^-scale.
pub fn decimal_value(raw: &[u8], precision: u32, scale: u32) -> (bool, BigDec) {
    let intg = precision - scale;
    let mut groups: Vec<(usize, u32)> = Vec::new(); // (bytes, digits)
    if !intg.is_multiple_of(9) {
        groups.push((DIG2BYTES[(intg % 9) as usize], intg % 9));
    }
    for _ in 0..intg / 9 {
        groups.push((4, 9));
    }
    for _ in 0..scale / 9 {
        groups.push((4, 9));
    }
    if !scale.is_multiple_of(9) {
        groups.push((DIG2BYTES[(scale % 9) as usize], scale % 9));
    }
    let positive = raw.first().is_some_and(|b| b & 0x80 != 0);
    let mut value = BigDec::default();
    let mut at = 0;
    let mut first = true;
    for (nbytes, digits) in groups {
        let mut g: u64 = 0;
        for (k, &b) in raw[at..at + nbytes].iter().enumerate() {
            // the sign bit is cleared; a negative number has every other bit inverted
            let byte = if at + k == 0 {
                if positive {
                    b ^ 0x80
                } else {
                    b ^ 0x7F
                }
            } else if positive {
                b
            } else {
                b ^ 0xFF
            };
            g = g << 8 | byte as u64;
        }
        at += nbytes;
        if first {
            value.mul_add(1, g);
            first = false;
        } else {
            value.mul_add(10u64.pow(digits), g);
        }
    }
    (!positive, value)
}

/// The unscaled value of a DECIMAL whose digit groups are all valid (each below 10^digits) and whose
/// precision is at most 38: the common case, without big-number arithmetic. None otherwise.
pub fn decimal_i128(raw: &[u8], precision: u32, scale: u32) -> Option<i128> {
    if precision > 38 {
        return None;
    }
    let intg = precision - scale;
    let positive = raw.first().is_some_and(|b| b & 0x80 != 0);
    let mut value: i128 = 0;
    let mut at = 0;
    let mut group = |digits: u32, value: &mut i128| -> Option<()> {
        let n = if digits == 9 {
            4
        } else {
            DIG2BYTES[digits as usize]
        };
        let mut g: u64 = 0;
        #[allow(clippy::needless_range_loop)]
        // k: the byte's place in the whole value (k == 0: the sign byte)
        for k in at..at + n {
            let b = raw[k];
            let b = if k == 0 {
                if positive {
                    b ^ 0x80
                } else {
                    b ^ 0x7F
                }
            } else if positive {
                b
            } else {
                b ^ 0xFF
            };
            g = g << 8 | b as u64;
        }
        at += n;
        if g >= 10u64.pow(digits) {
            return None;
        }
        *value = *value * 10i128.pow(digits) + g as i128;
        Some(())
    };
    if !intg.is_multiple_of(9) {
        group(intg % 9, &mut value)?;
    }
    for _ in 0..intg / 9 {
        group(9, &mut value)?;
    }
    for _ in 0..scale / 9 {
        group(9, &mut value)?;
    }
    if !scale.is_multiple_of(9) {
        group(scale % 9, &mut value)?;
    }
    Some(if positive { value } else { -value })
}

/// ``format(Decimal, "f")`` of coefficient * 10^-scale with its sign (``-0.00`` included).
pub fn decimal_text(negative: bool, coef: &BigDec, scale: u32, out: &mut String) {
    if negative {
        out.push('-');
    }
    let digits = coef.digits();
    let scale = scale as usize;
    if scale == 0 {
        out.push_str(&digits);
        return;
    }
    if digits.len() <= scale {
        out.push_str("0.");
        for _ in 0..scale - digits.len() {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..digits.len() - scale]);
        out.push('.');
        out.push_str(&digits[digits.len() - scale..]);
    }
}

/// ``f"{v:0{width}d}"`` without the formatting machinery (temporals are printed for every row).
pub fn push_padded(out: &mut String, v: u64, width: usize) {
    let mut buf = [b'0'; 20];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let start = i.min(buf.len() - width.min(buf.len()));
    out.push_str(std::str::from_utf8(&buf[start..]).unwrap());
}

/// ``"." + f"{microsecond:06d}"[:fsp]`` (``binlake.binlog.values._frac``).
pub fn frac(micro: u64, fsp: u8, out: &mut String) {
    if fsp > 0 {
        let mut s = String::with_capacity(8);
        push_padded(&mut s, micro, 6);
        out.push('.');
        out.push_str(&s[..(fsp as usize).min(s.len())]);
    }
}

pub fn date_text(y: u64, m: u64, d: u64, out: &mut String) {
    push_padded(out, y, 4);
    out.push('-');
    push_padded(out, m, 2);
    out.push('-');
    push_padded(out, d, 2);
}

fn hms(h: u64, mi: u64, s: u64, out: &mut String) {
    push_padded(out, h, 2);
    out.push(':');
    push_padded(out, mi, 2);
    out.push(':');
    push_padded(out, s, 2);
}

#[allow(clippy::too_many_arguments)]
pub fn datetime_text(
    y: u64,
    mo: u64,
    d: u64,
    h: u64,
    mi: u64,
    s: u64,
    micro: u64,
    fsp: u8,
    out: &mut String,
) {
    date_text(y, mo, d, out);
    out.push(' ');
    hms(h, mi, s, out);
    frac(micro, fsp, out);
}

pub fn time_text(neg: bool, h: u64, m: u64, s: u64, micro: u64, fsp: u8, out: &mut String) {
    if neg {
        out.push('-');
    }
    hms(h, m, s, out);
    frac(micro, fsp, out);
}

/// Days since 1970-01-01 of a proleptic Gregorian date (no range checks).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719468;
    let era = if z >= 0 { z } else { z - 146096 } / 146097;
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// ``MysqlTimestamp.__str__``: UTC text, the zero timestamp as ``0000-00-00 00:00:00``.
pub fn timestamp_text(secs: u64, micro: u64, fsp: u8, out: &mut String) {
    if secs == 0 && micro == 0 {
        out.push_str("0000-00-00 00:00:00");
        frac(0, fsp, out);
        return;
    }
    let (y, m, d) = civil_from_days((secs / 86400) as i64);
    let t = secs % 86400;
    datetime_text(
        y as u64,
        m as u64,
        d as u64,
        t / 3600,
        t / 60 % 60,
        t % 60,
        micro,
        fsp,
        out,
    );
}

/// Python ``int()`` of an ASCII slice (surrounding whitespace, one sign, digits).
fn py_int(s: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(s).ok()?.trim();
    let (neg, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 18 {
        return None;
    }
    let v: i64 = digits.parse().ok()?;
    Some(if neg { -v } else { v })
}

fn slice(s: &[u8], a: usize, b: usize) -> &[u8] {
    let n = s.len();
    &s[a.min(n)..b.min(n)]
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

pub fn valid_date(y: i64, m: i64, d: i64) -> bool {
    (1..=9999).contains(&y) && (1..=12).contains(&m) && d >= 1 && d <= days_in_month(y, m)
}

/// Microseconds the text of a fraction keeps (``f"{micro:06d}"[:fsp]`` read back padded): None when the
/// value has more than 6 digits (corrupt input; the text path decides).
pub fn kept_micro(micro: u64, fsp: u8) -> Option<i64> {
    if micro >= 1_000_000 {
        return None;
    }
    let unit = 10u64.pow(6 - fsp.min(6) as u32);
    Some((micro / unit * unit) as i64)
}

/// ``_date``/``_datetime`` from fields whose text has the usual widths (4-digit year, 2-digit parts), else
/// None (the caller goes through the text).
#[allow(clippy::too_many_arguments)] // the fields of a date, a time and a datetime, as the text gives them
pub fn typed_fields(
    y: u64,
    mo: u64,
    d: u64,
    h: u64,
    mi: u64,
    s: u64,
    micro: u64,
    fsp: u8,
    time: bool,
) -> Option<Option<i64>> {
    if y > 9999 || mo > 99 || d > 99 || h > 99 || mi > 99 || s > 99 {
        return None;
    }
    let (y, mo, d) = (y as i64, mo as i64, d as i64);
    if !valid_date(y, mo, d) {
        return Some(None);
    }
    let days = days_from_civil(y, mo, d);
    if !time {
        return Some(Some(days));
    }
    if h >= 24 || mi >= 60 || s >= 60 {
        return Some(None);
    }
    let us = if fsp == 0 { 0 } else { kept_micro(micro, fsp)? };
    Some(Some(
        (days * 86400 + (h * 3600 + mi * 60 + s) as i64) * 1_000_000 + us,
    ))
}

/// ``binlake.pipeline.types._date`` of a DATE's text: days since the epoch, None for a zero/invalid date.
pub fn typed_date(text: &[u8]) -> Option<i32> {
    let (y, m, d) = (
        py_int(slice(text, 0, 4))?,
        py_int(slice(text, 5, 7))?,
        py_int(slice(text, 8, 10))?,
    );
    valid_date(y, m, d).then(|| days_from_civil(y, m, d) as i32)
}

/// ``binlake.pipeline.types._datetime`` of a DATETIME/TIMESTAMP text: microseconds since the epoch (as UTC or
/// wall time), None for a zero/invalid value.
pub fn typed_datetime(text: &[u8]) -> Option<i64> {
    let f = |a, b| py_int(slice(text, a, b));
    let (y, mo, d, h, mi, s) = (
        f(0, 4)?,
        f(5, 7)?,
        f(8, 10)?,
        f(11, 13)?,
        f(14, 16)?,
        f(17, 19)?,
    );
    let us = if text.len() > 19 {
        let fr = slice(text, 20, 26);
        if fr.is_empty() {
            0
        } else {
            let mut padded = fr.to_vec();
            while padded.len() < 6 {
                padded.push(b'0');
            }
            py_int(&padded)?
        }
    } else {
        0
    };
    if !valid_date(y, mo, d)
        || !(0..24).contains(&h)
        || !(0..60).contains(&mi)
        || !(0..60).contains(&s)
        || !(0..1_000_000).contains(&us)
    {
        return None;
    }
    Some(((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s) * 1_000_000) + us)
}

/// JSON string escaping as ``json.dumps`` does: ``ensure_ascii=False`` keeps non-ASCII as UTF-8; ``ascii``
/// writes ``\uXXXX`` (surrogate pairs beyond the BMP). Bytes that are not UTF-8 are surrogate escapes
/// (U+DC80..U+DCFF), which only the ASCII form can hold (callers switch to it when they occur).
pub fn json_str(raw: &[u8], ascii: bool, out: &mut Vec<u8>) {
    out.push(b'"');
    let mut rest = raw;
    loop {
        let (valid, bad) = match std::str::from_utf8(rest) {
            Ok(s) => (s, None),
            Err(e) => {
                let n = e.valid_up_to();
                let bad = e.error_len().unwrap_or(rest.len() - n);
                (
                    unsafe { std::str::from_utf8_unchecked(&rest[..n]) },
                    Some((n, bad)),
                )
            }
        };
        escape_valid(valid, ascii, out);
        match bad {
            None => break,
            Some((n, len)) => {
                for &b in &rest[n..n + len] {
                    let _ = write!(VecWriter(out), "\\u{:04x}", 0xDC00u32 + b as u32);
                }
                rest = &rest[n + len..];
            }
        }
    }
    out.push(b'"');
}

struct VecWriter<'a>(&'a mut Vec<u8>);

impl Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

fn escape_valid(s: &str, ascii: bool, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            _ => None,
        };
        // as Python's json.dumps: control characters always escaped, with ``ensure_ascii`` also DEL and non-ASCII
        if esc.is_some() || b < 0x20 || (ascii && b >= 0x7f) {
            out.extend_from_slice(&bytes[start..i]);
            start = i + 1;
            if let Some(e) = esc {
                out.extend_from_slice(e);
            } else if b < 0x20 || b == 0x7f {
                let _ = write!(VecWriter(out), "\\u{:04x}", b);
            } else if b & 0xC0 != 0x80 {
                // first byte of a multi-byte character: write the whole character
                let c = s[i..].chars().next().unwrap();
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(VecWriter(out), "\\u{:04x}", u);
                }
            }
        }
    }
    out.extend_from_slice(&bytes[start..]);
}

pub fn json_string(s: &str, ascii: bool, out: &mut Vec<u8>) {
    out.push(b'"');
    escape_valid(s, ascii, out);
    out.push(b'"');
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub fn base64(data: &[u8], out: &mut String) {
    for chunk in data.chunks(3) {
        let n = chunk.len();
        let v = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for k in 0..4 {
            if k <= n {
                out.push(B64[(v >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

pub fn hex(data: &[u8], out: &mut Vec<u8>) {
    const H: &[u8; 16] = b"0123456789abcdef";
    for &b in data {
        out.push(H[(b >> 4) as usize]);
        out.push(H[(b & 15) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(x: f64) -> String {
        let mut s = String::new();
        py_float_repr(x, &mut s);
        s
    }

    #[test]
    fn float_repr_matches_python() {
        assert_eq!(repr(0.0), "0.0");
        assert_eq!(repr(-0.0), "-0.0");
        assert_eq!(repr(1e16), "1e+16");
        assert_eq!(repr(1e15), "1000000000000000.0");
        assert_eq!(repr(0.0001), "0.0001");
        assert_eq!(repr(0.00001), "1e-05");
        assert_eq!(repr(1.5e-7), "1.5e-07");
        assert_eq!(repr(123.456), "123.456");
        assert_eq!(repr(1.7976931348623157e308), "1.7976931348623157e+308");
    }

    #[test]
    fn temporal_text_pads_like_python() {
        let mut s = String::new();
        datetime_text(7, 1, 2, 3, 4, 5, 1234567, 3, &mut s);
        time_text(true, 838, 59, 59, 5, 6, &mut s);
        date_text(12345, 0, 0, &mut s);
        assert_eq!(s, "0007-01-02 03:04:05.123-838:59:59.00000512345-00-00");
    }

    #[test]
    fn decimal_digits() {
        // DECIMAL(5,2) 123.45: int part 3 digits (2 bytes), frac 2 digits (1 byte)
        let raw = [0x80, 123, 45];
        let (neg, v) = decimal_value(&raw, 5, 2);
        let mut s = String::new();
        decimal_text(neg, &v, 2, &mut s);
        assert_eq!(s, "123.45");
    }
}
