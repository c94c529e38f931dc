//! Row images of WRITE/UPDATE/DELETE/PARTIAL_UPDATE rows events (``unpack_row``, sql/rpl_record.cc), read as
//! ``binlake.binlog.rows`` and ``binlake.binlog.columns`` read them: a NULL bitmap over the present columns,
//! then each value in its ``Field_*::unpack`` format. A read past the event's end is ``Err(())``: the Python
//! decoder raises a typed error for that event, and names it.

use crate::layout::{Codec, Kind, Layout, Plan, R};
use std::rc::Rc;

#[derive(Clone, Copy, Debug)]
pub enum Val<'a> {
    Null,
    Int(i64),
    UInt(u64),
    Float(u32),
    Double(f64),
    Decimal(&'a [u8], u8, u8),
    Date(u32, u8, u8),
    DateTime {
        y: u32,
        mo: u8,
        d: u8,
        h: u8,
        mi: u8,
        s: u8,
        us: u32,
        fsp: u8,
    },
    Timestamp {
        secs: u32,
        us: u32,
        fsp: u8,
    },
    Time {
        neg: bool,
        h: u32,
        m: u8,
        s: u8,
        us: u32,
        fsp: u8,
    },
    /// text in UTF-8 (undecodable bytes are surrogate escapes)
    Text(&'a [u8]),
    /// MySQL latin1
    Cp1252(&'a [u8]),
    /// text of another charset, decoded by Python: index into ``Decoded::texts``
    PyText(usize),
    Bytes(&'a [u8]),
    Padded(&'a [u8], usize),
    /// ENUM/SET of a column with names; without names the value is an Int
    Enum(u64),
    Set(u64),
    Bit(&'a [u8]),
    Json(&'a [u8]),
    Vector(&'a [u8]),
    /// a partial JSON cell: index into ``Decoded::diffs``
    Partial(usize),
}

pub struct Cell<'a> {
    pub col: u32,
    pub val: Val<'a>,
}

pub struct Row {
    pub before: Option<(usize, usize)>,
    pub after: Option<(usize, usize)>,
    /// PARTIAL_UPDATE_ROWS with partial columns: the columns (their after values are ``Val::Partial``)
    pub partial: Option<Vec<u32>>,
}

pub struct Decoded<'a> {
    pub cells: Vec<Cell<'a>>,
    pub rows: Vec<Row>,
    pub texts: Vec<String>,
    /// partial JSON cells: their raw diff vectors (the Python decoder parses them)
    pub diffs: Vec<&'a [u8]>,
    pub before_plan: Option<Rc<Plan>>,
    pub after_plan: Option<Rc<Plan>>,
}

pub trait TextDecoder {
    fn decode(&mut self, raw: &[u8], codec: &'static str) -> String;
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64)
}
fn be(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |v, &x| v << 8 | x as u64)
}

fn take<'a>(buf: &'a [u8], pos: &mut usize, n: usize) -> R<&'a [u8]> {
    let end = pos.checked_add(n).ok_or(())?;
    if end > buf.len() {
        return Err(());
    }
    let s = &buf[*pos..end];
    *pos = end;
    Ok(s)
}

/// ``_length_prefixed``: a little-endian length of ``n`` bytes, then the data.
fn prefixed<'a>(buf: &'a [u8], pos: &mut usize, n: u8) -> R<&'a [u8]> {
    let len = le(take(buf, pos, n as usize)?) as usize;
    take(buf, pos, len)
}

/// The microseconds of a TIMESTAMP2/DATETIME2 fraction of ``fsp`` digits (``my_datetime_packed_from_binary``).
fn fraction(buf: &[u8], pos: &mut usize, fsp: u8) -> R<u64> {
    Ok(match fsp.div_ceil(2) {
        0 => 0,
        1 => take(buf, pos, 1)?[0] as u64 * 10000,
        2 => be(take(buf, pos, 2)?) * 100,
        _ => be(take(buf, pos, 3)?),
    })
}

pub fn read_value<'a>(
    kind: &Kind,
    buf: &'a [u8],
    pos: &mut usize,
    texts: &mut Vec<String>,
    td: &mut dyn TextDecoder,
) -> R<Val<'a>> {
    Ok(match kind {
        Kind::Int { bytes, unsigned } => {
            let raw = le(take(buf, pos, *bytes as usize)?);
            let bits = *bytes as u32 * 8;
            if *unsigned {
                Val::UInt(raw)
            } else {
                Val::Int(((raw << (64 - bits)) as i64) >> (64 - bits))
            }
        }
        Kind::Float => Val::Float(le(take(buf, pos, 4)?) as u32),
        Kind::Double => Val::Double(f64::from_bits(le(take(buf, pos, 8)?))),
        Kind::Decimal { p, s, size } => Val::Decimal(take(buf, pos, *size)?, *p, *s),
        Kind::Year => {
            let b = take(buf, pos, 1)?[0] as i64;
            Val::Int(if b != 0 { b + 1900 } else { 0 })
        }
        Kind::Date => {
            let x = le(take(buf, pos, 3)?);
            Val::Date((x >> 9) as u32, (x >> 5 & 15) as u8, (x & 31) as u8)
        }
        Kind::Time => {
            let raw = le(take(buf, pos, 3)?);
            let v = ((raw << 40) as i64) >> 40;
            let (neg, v) = (v < 0, v.unsigned_abs());
            Val::Time {
                neg,
                h: (v / 10000) as u32,
                m: (v / 100 % 100) as u8,
                s: (v % 100) as u8,
                us: 0,
                fsp: 0,
            }
        }
        Kind::DateTime => {
            let v = le(take(buf, pos, 8)?);
            let (d, t) = (v / 1_000_000, v % 1_000_000);
            Val::DateTime {
                y: (d / 10000) as u32,
                mo: (d / 100 % 100) as u8,
                d: (d % 100) as u8,
                h: (t / 10000) as u8,
                mi: (t / 100 % 100) as u8,
                s: (t % 100) as u8,
                us: 0,
                fsp: 0,
            }
        }
        Kind::Timestamp => Val::Timestamp {
            secs: le(take(buf, pos, 4)?) as u32,
            us: 0,
            fsp: 0,
        },
        Kind::Timestamp2(fsp) => {
            let secs = be(take(buf, pos, 4)?);
            Val::Timestamp {
                secs: secs as u32,
                us: fraction(buf, pos, *fsp)? as u32,
                fsp: *fsp,
            }
        }
        Kind::DateTime2(fsp) => {
            let fsp = *fsp;
            if fsp >= 5 {
                let w = be(take(buf, pos, 8)?);
                let x = ((w >> 24) as i64 - 0x80_0000_0000).unsigned_abs();
                let y = x >> 22;
                Val::DateTime {
                    y: (y / 13) as u32,
                    mo: (y % 13) as u8,
                    d: (x >> 17 & 31) as u8,
                    h: (x >> 12 & 31) as u8,
                    mi: (x >> 6 & 63) as u8,
                    s: (x & 63) as u8,
                    us: (w & 0xFF_FFFF) as u32,
                    fsp,
                }
            } else {
                let x = (be(take(buf, pos, 5)?) as i64 - 0x80_0000_0000).unsigned_abs();
                let us = fraction(buf, pos, fsp)?;
                let d = x >> 17;
                let y = d >> 5;
                Val::DateTime {
                    y: (y / 13) as u32,
                    mo: (y % 13) as u8,
                    d: (d & 31) as u8,
                    h: (x >> 12 & 31) as u8,
                    mi: (x >> 6 & 63) as u8,
                    s: (x & 63) as u8,
                    us: us as u32,
                    fsp,
                }
            }
        }
        Kind::Time2(fsp) => {
            let fsp = *fsp;
            if fsp == 0 || fsp >= 5 {
                let size = if fsp == 0 { 3 } else { 6 };
                let x = be(take(buf, pos, size)?) as i64 - (1i64 << (8 * size - 1));
                let (neg, x) = (x < 0, x.unsigned_abs());
                let h = if fsp > 0 { x >> 24 } else { x };
                Val::Time {
                    neg,
                    h: (h >> 12 & 1023) as u32,
                    m: (h >> 6 & 63) as u8,
                    s: (h & 63) as u8,
                    us: if fsp > 0 { (x & 0xFF_FFFF) as u32 } else { 0 },
                    fsp,
                }
            } else {
                let size = if fsp <= 2 { 4 } else { 5 };
                let unit: i64 = if size == 4 { 10000 } else { 100 };
                let raw = take(buf, pos, size)?;
                let mut intpart = be(&raw[..3]) as i64 - 0x80_0000;
                let mut frac = be(&raw[3..]) as i64;
                if intpart < 0 && frac != 0 {
                    intpart += 1;
                    frac -= 1i64 << (8 * (size - 3));
                }
                let v = (intpart << 24) + frac * unit;
                let (neg, v) = (v < 0, v.unsigned_abs());
                let hms = v >> 24;
                Val::Time {
                    neg,
                    h: (hms >> 12 & 0x3FF) as u32,
                    m: (hms >> 6 & 63) as u8,
                    s: (hms & 63) as u8,
                    us: (v & 0xFF_FFFF) as u32,
                    fsp,
                }
            }
        }
        Kind::HiresTimestamp(fsp) => {
            let secs = be(take(buf, pos, 4)?) as u32;
            let nfrac = [0, 1, 1, 2, 2, 3, 3][*fsp as usize];
            let frac = be(take(buf, pos, nfrac)?) * 10u64.pow(6 - *fsp as u32);
            Val::Timestamp {
                secs,
                us: frac as u32,
                fsp: *fsp,
            }
        }
        Kind::HiresTime(fsp) => {
            let size = [3, 4, 4, 5, 5, 5, 6][*fsp as usize];
            let zero = (3_020_399i128 + 1) * 10i128.pow(*fsp as u32);
            let v = (be(take(buf, pos, size)?) as i128 - zero) * 10i128.pow(6 - *fsp as u32);
            let (neg, v) = (v < 0, v.unsigned_abs());
            let (secs, us) = (v / 1_000_000, v % 1_000_000);
            Val::Time {
                neg,
                h: (secs / 3600) as u32,
                m: (secs / 60 % 60) as u8,
                s: (secs % 60) as u8,
                us: us as u32,
                fsp: *fsp,
            }
        }
        Kind::HiresDateTime(fsp) => {
            let size = [5, 6, 6, 7, 7, 7, 8][*fsp as usize];
            let v = be(take(buf, pos, size)?) as u128 * 10u128.pow(6 - *fsp as u32);
            let (v, us) = (v / 1_000_000, v % 1_000_000);
            let (v, s) = (v / 60, v % 60);
            let (v, mi) = (v / 60, v % 60);
            let (v, h) = (v / 24, v % 24);
            let (v, d) = (v / 32, v % 32);
            Val::DateTime {
                y: (v / 13) as u32,
                mo: (v % 13) as u8,
                d: d as u8,
                h: h as u8,
                mi: mi as u8,
                s: s as u8,
                us: us as u32,
                fsp: *fsp,
            }
        }
        Kind::Str {
            len_bytes,
            codec,
            pad,
        } => {
            let data = prefixed(buf, pos, *len_bytes)?;
            match codec {
                Codec::Utf8 => Val::Text(data),
                Codec::Cp1252 => Val::Cp1252(data),
                Codec::Py(name) => {
                    texts.push(td.decode(data, name));
                    Val::PyText(texts.len() - 1)
                }
                Codec::Binary => match pad {
                    Some(n) if data.len() < *n => Val::Padded(data, *n),
                    _ => Val::Bytes(data),
                },
            }
        }
        Kind::Enum { pack, names } => {
            let v = le(take(buf, pos, *pack as usize)?);
            match names {
                Some(n) if (v as usize) < n.len() + 1 => Val::Enum(v),
                _ => Val::UInt(v),
            }
        }
        Kind::Set { pack, names } => {
            let m = le(take(buf, pos, *pack as usize)?);
            match names {
                Some(n) if n.len() >= 64 || m >> n.len() == 0 => Val::Set(m),
                _ => Val::UInt(m),
            }
        }
        Kind::Bit { nbytes } => Val::Bit(take(buf, pos, *nbytes)?),
        Kind::Json { len_bytes } => Val::Json(prefixed(buf, pos, *len_bytes)?),
        Kind::Geometry { len_bytes } => Val::Bytes(prefixed(buf, pos, *len_bytes)?),
        Kind::Vector { len_bytes } => Val::Vector(prefixed(buf, pos, *len_bytes)?),
        Kind::Null => Val::Null,
        Kind::Fail => return Err(()),
    })
}

/// One image: the NULL bitmap over the plan's columns, then their values (``compile_reader``'s readers).
fn image<'a>(
    layout: &Layout,
    plan: &Plan,
    buf: &'a [u8],
    pos: &mut usize,
    d: &mut Decoded<'a>,
    td: &mut dyn TextDecoder,
) -> R<(usize, usize)> {
    let nulls = take(buf, pos, plan.null_bytes)?;
    let start = d.cells.len();
    for (k, &c) in plan.idx.iter().enumerate() {
        let val = if nulls[k >> 3] >> (k & 7) & 1 == 1 {
            Val::Null
        } else {
            read_value(&layout.columns[c as usize].kind, buf, pos, &mut d.texts, td)?
        };
        d.cells.push(Cell { col: c, val });
    }
    Ok((start, d.cells.len()))
}

/// ``_partial_after``: the shared image (``value_options``, ``partial_columns``) and the after image of one
/// PARTIAL_UPDATE_ROWS row, partial JSON columns holding their diff vectors.
fn partial_after<'a>(
    layout: &Layout,
    plan: &Plan,
    buf: &'a [u8],
    pos: &mut usize,
    end: usize,
    d: &mut Decoded<'a>,
    td: &mut dyn TextDecoder,
) -> R<((usize, usize), Option<Vec<u32>>)> {
    let first = *buf.get(*pos).ok_or(())?;
    let value_options = match first {
        b if b < 251 => {
            *pos += 1;
            b as u64
        }
        252..=254 => {
            let n = match first {
                252 => 2,
                253 => 3,
                _ => 8,
            };
            *pos += 1;
            le(take(buf, pos, n)?)
        }
        _ => return Err(()),
    };
    if value_options & 1 == 0 {
        return Ok((image(layout, plan, buf, pos, d, td)?, None));
    }
    let nbits = (layout.json_columns.len() + 7) >> 3;
    let bits = take(buf, pos, nbits)?;
    if *pos > end {
        return Err(());
    }
    let partial: Vec<u32> = layout
        .json_columns
        .iter()
        .enumerate()
        .filter(|(k, _)| bits[k >> 3] >> (k & 7) & 1 == 1)
        .map(|(_, &c)| c)
        .collect();
    if partial.is_empty() {
        return Ok((image(layout, plan, buf, pos, d, td)?, None));
    }
    let nulls = take(buf, pos, plan.null_bytes)?;
    let start = d.cells.len();
    for (k, &c) in plan.idx.iter().enumerate() {
        let val = if nulls[k >> 3] >> (k & 7) & 1 == 1 {
            Val::Null
        } else if partial.contains(&c) {
            // a 4-byte length (the column's metadata says how many bytes), then the diff vector
            let n = layout.columns[c as usize].meta as usize;
            let avail = buf.len().saturating_sub(*pos).min(n);
            let lenbytes = &buf[*pos..*pos + avail];
            if lenbytes.len() > 8 && lenbytes[8..].iter().any(|&b| b != 0) {
                return Err(());
            }
            let len = le(&lenbytes[..lenbytes.len().min(8)]) as usize;
            *pos = pos.checked_add(n).ok_or(())?;
            let raw = take(buf, pos, len)?;
            d.diffs.push(raw);
            Val::Partial(d.diffs.len() - 1)
        } else {
            read_value(&layout.columns[c as usize].kind, buf, pos, &mut d.texts, td)?
        };
        d.cells.push(Cell { col: c, val });
    }
    Ok(((start, d.cells.len()), Some(partial)))
}

pub const PARTIAL_UPDATE_ROWS_EVENT: u8 = 39;

pub fn is_update(t: u8) -> bool {
    matches!(t, 21 | 24 | 31 | 39 | 167 | 170)
}
pub fn is_delete(t: u8) -> bool {
    matches!(t, 22 | 25 | 32 | 168 | 171)
}

/// All rows of one rows event body ``buf[pos..end]`` (``buf`` ends at ``end``), as ``decode_rows``.
pub fn decode_rows<'a>(
    layout: &Layout,
    t: u8,
    buf: &'a [u8],
    mut pos: usize,
    present: &[u8],
    present_after: &[u8],
    td: &mut dyn TextDecoder,
) -> R<Decoded<'a>> {
    let end = buf.len();
    let mut d = Decoded {
        cells: Vec::with_capacity(((end - pos) / 4).min(1 << 16) + 8),
        rows: Vec::with_capacity(64),
        texts: Vec::new(),
        diffs: Vec::new(),
        before_plan: None,
        after_plan: None,
    };
    let plan = layout.plan(present);
    let update = is_update(t);
    let plan_after = if update {
        Some(layout.plan(present_after))
    } else {
        None
    };
    while pos < end {
        let row_start = pos;
        let row = if t == PARTIAL_UPDATE_ROWS_EVENT {
            let before = image(layout, &plan, buf, &mut pos, &mut d, td)?;
            let (after, partial) = partial_after(
                layout,
                plan_after.as_ref().unwrap(),
                buf,
                &mut pos,
                end,
                &mut d,
                td,
            )?;
            Row {
                before: Some(before),
                after: Some(after),
                partial,
            }
        } else if update {
            let before = image(layout, &plan, buf, &mut pos, &mut d, td)?;
            let after = image(
                layout,
                plan_after.as_ref().unwrap(),
                buf,
                &mut pos,
                &mut d,
                td,
            )?;
            Row {
                before: Some(before),
                after: Some(after),
                partial: None,
            }
        } else {
            let img = image(layout, &plan, buf, &mut pos, &mut d, td)?;
            if is_delete(t) {
                Row {
                    before: Some(img),
                    after: None,
                    partial: None,
                }
            } else {
                Row {
                    before: None,
                    after: Some(img),
                    partial: None,
                }
            }
        };
        if pos > end || (pos == row_start && t != PARTIAL_UPDATE_ROWS_EVENT) {
            return Err(());
        }
        d.rows.push(row);
    }
    if update {
        d.before_plan = Some(plan);
        d.after_plan = plan_after;
    } else if is_delete(t) {
        d.before_plan = Some(plan);
    } else {
        d.after_plan = Some(plan);
    }
    Ok(d)
}

/// MySQL's latin1 (cp1252 whose five undefined bytes map to the same C1 code points) to UTF-8.
pub fn cp1252(raw: &[u8], out: &mut Vec<u8>) {
    const HIGH: [u16; 32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013,
        0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ];
    for &b in raw {
        let cp = if (0x80..0xA0).contains(&b) {
            HIGH[(b - 0x80) as usize] as u32
        } else {
            b as u32
        };
        let mut tmp = [0u8; 4];
        out.extend_from_slice(char::from_u32(cp).unwrap().encode_utf8(&mut tmp).as_bytes());
    }
}
