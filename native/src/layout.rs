//! TABLE_MAP_EVENT (``Table_map_event``, libs/mysql/binlog/event/rows_event.cpp) and the row layout built from
//! it, as ``binlake.binlog.decoders.decode_table_map`` and ``binlake.binlog.table.build_layout`` do without a
//! schema provider: column names, signedness, collations and ENUM/SET names from the optional metadata,
//! else the same assumptions; one value reader kind per column (``binlake.binlog.columns.column_decoder``).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// A bounded cursor over ``buf[pos..end]``; a read past the fence is ``Err(())`` (the Python decoder raises
/// a typed error there, which the caller asks it for).
pub struct Cur<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub end: usize,
}

pub type R<T> = Result<T, ()>;

impl<'a> Cur<'a> {
    pub fn new(buf: &'a [u8], pos: usize, end: usize) -> Self {
        Cur {
            buf,
            pos,
            end: end.min(buf.len()),
        }
    }
    pub fn remaining(&self) -> usize {
        self.end.saturating_sub(self.pos)
    }
    pub fn bytes(&mut self, n: u64) -> R<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(());
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }
    pub fn skip(&mut self, n: u64) -> R<()> {
        self.bytes(n).map(|_| ())
    }
    pub fn uint(&mut self, n: usize) -> R<u64> {
        let b = self.bytes(n as u64)?;
        Ok(b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64))
    }
    pub fn u8(&mut self) -> R<u8> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> R<u16> {
        Ok(self.uint(2)? as u16)
    }
    pub fn u32(&mut self) -> R<u32> {
        Ok(self.uint(4)? as u32)
    }
    pub fn u64(&mut self) -> R<u64> {
        self.uint(8)
    }
    /// ``net_field_length_ll``; 251 and 255 are corrupt.
    pub fn packed(&mut self) -> R<u64> {
        match self.u8()? {
            b if b < 251 => Ok(b as u64),
            252 => Ok(self.uint(2)?),
            253 => Ok(self.uint(3)?),
            254 => self.u64(),
            _ => Err(()),
        }
    }
    pub fn packed_bytes(&mut self) -> R<&'a [u8]> {
        let n = self.packed()?;
        self.bytes(n)
    }
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos.min(self.end)..self.end];
        self.pos = self.end;
        s
    }
}

// enum_field_types
pub const T_DECIMAL: u8 = 0;
pub const T_TINY: u8 = 1;
pub const T_SHORT: u8 = 2;
pub const T_LONG: u8 = 3;
pub const T_FLOAT: u8 = 4;
pub const T_DOUBLE: u8 = 5;
pub const T_NULL: u8 = 6;
pub const T_TIMESTAMP: u8 = 7;
pub const T_LONGLONG: u8 = 8;
pub const T_INT24: u8 = 9;
pub const T_DATE: u8 = 10;
pub const T_TIME: u8 = 11;
pub const T_DATETIME: u8 = 12;
pub const T_YEAR: u8 = 13;
pub const T_NEWDATE: u8 = 14;
pub const T_VARCHAR: u8 = 15;
pub const T_BIT: u8 = 16;
pub const T_TIMESTAMP2: u8 = 17;
pub const T_DATETIME2: u8 = 18;
pub const T_TIME2: u8 = 19;
pub const T_VECTOR: u8 = 242;
pub const T_JSON: u8 = 245;
pub const T_NEWDECIMAL: u8 = 246;
pub const T_ENUM: u8 = 247;
pub const T_SET: u8 = 248;
pub const T_TINY_BLOB: u8 = 249;
pub const T_MEDIUM_BLOB: u8 = 250;
pub const T_LONG_BLOB: u8 = 251;
pub const T_BLOB: u8 = 252;
pub const T_VAR_STRING: u8 = 253;
pub const T_STRING: u8 = 254;
pub const T_GEOMETRY: u8 = 255;

fn is_numeric(t: u8) -> bool {
    matches!(
        t,
        T_TINY
            | T_SHORT
            | T_INT24
            | T_LONG
            | T_LONGLONG
            | T_NEWDECIMAL
            | T_FLOAT
            | T_DOUBLE
            | T_DECIMAL
    )
}
fn is_character(t: u8) -> bool {
    matches!(
        t,
        T_STRING | T_VAR_STRING | T_VARCHAR | T_BLOB | T_TINY_BLOB | T_MEDIUM_BLOB | T_LONG_BLOB
    )
}

/// How text of a column is decoded (``collation_codec``): binary, UTF-8 (surrogate escapes), MySQL's latin1
/// (cp1252 plus the five C1 bytes), or another Python codec (the Python decoder's ``decode_text``).
#[derive(Clone, Debug, PartialEq)]
pub enum Codec {
    Binary,
    Utf8,
    Cp1252,
    Py(&'static str),
}

/// Charset of a collation id below 256 (MySQL 8.0 and MariaDB share them), as ``binlake.binlog.values``.
fn collation_charset(id: u64) -> Option<&'static str> {
    let table: &[(&str, &[u64])] = &[
        ("big5", &[1, 84]),
        ("latin2", &[2, 9, 21, 27, 77]),
        ("dec8", &[3, 69]),
        ("cp850", &[4, 80]),
        ("latin1", &[5, 8, 15, 31, 47, 48, 49, 94]),
        ("hp8", &[6, 72]),
        ("koi8r", &[7, 74]),
        ("swe7", &[10, 82]),
        ("ascii", &[11, 65]),
        ("ujis", &[12, 91]),
        ("sjis", &[13, 88]),
        ("cp1251", &[14, 23, 50, 51, 52]),
        ("hebrew", &[16, 71]),
        ("tis620", &[18, 89]),
        ("euckr", &[19, 85]),
        ("latin7", &[20, 41, 42, 79]),
        ("koi8u", &[22, 75]),
        ("gb2312", &[24, 86]),
        ("greek", &[25, 70]),
        ("cp1250", &[26, 34, 44, 66, 99]),
        ("gbk", &[28, 87]),
        ("cp1257", &[29, 58, 59]),
        ("latin5", &[30, 78]),
        ("armscii8", &[32, 64]),
        ("utf8mb3", &[33, 76, 83]),
        ("ucs2", &[35, 90]),
        ("cp866", &[36, 68]),
        ("keybcs2", &[37, 73]),
        ("macce", &[38, 43]),
        ("macroman", &[39, 53]),
        ("cp852", &[40, 81]),
        ("utf8mb4", &[45, 46, 255]),
        ("cp1256", &[57, 67]),
        ("utf16", &[54, 55]),
        ("utf16le", &[56, 62]),
        ("utf32", &[60, 61]),
        ("binary", &[63]),
        ("geostd8", &[92, 93]),
        ("cp932", &[95, 96]),
        ("eucjpms", &[97, 98]),
        ("gb18030", &[248, 249, 250]),
    ];
    match id {
        192..=223 => return Some("utf8mb3"),
        128..=159 => return Some("ucs2"),
        224..=247 => return Some("utf8mb4"),
        101..=124 => return Some("utf16"),
        160..=183 => return Some("utf32"),
        _ => {}
    }
    table
        .iter()
        .find(|(_, ids)| ids.contains(&id))
        .map(|(name, _)| *name)
}

pub fn collation_codec(id: Option<u64>) -> Codec {
    let Some(id) = id else { return Codec::Binary };
    let Some(name) = collation_charset(id) else {
        return Codec::Utf8;
    };
    match name {
        "utf8mb3" | "utf8mb4" => Codec::Utf8,
        "latin1" => Codec::Cp1252,
        "binary" => Codec::Binary,
        "big5" => Codec::Py("big5"),
        "dec8" | "hp8" | "armscii8" | "keybcs2" | "geostd8" => Codec::Py("latin-1"),
        "cp850" => Codec::Py("cp850"),
        "koi8r" => Codec::Py("koi8_r"),
        "latin2" => Codec::Py("iso8859_2"),
        "swe7" | "ascii" => Codec::Py("ascii"),
        "ujis" | "eucjpms" => Codec::Py("euc_jp"),
        "sjis" => Codec::Py("shift_jis"),
        "hebrew" => Codec::Py("iso8859_8"),
        "tis620" => Codec::Py("tis_620"),
        "euckr" => Codec::Py("euc_kr"),
        "koi8u" => Codec::Py("koi8_u"),
        "gb2312" => Codec::Py("gb2312"),
        "greek" => Codec::Py("iso8859_7"),
        "cp1250" => Codec::Py("cp1250"),
        "gbk" => Codec::Py("gbk"),
        "latin5" => Codec::Py("iso8859_9"),
        "ucs2" | "utf16" => Codec::Py("utf-16-be"),
        "cp866" => Codec::Py("cp866"),
        "macce" => Codec::Py("mac_latin2"),
        "macroman" => Codec::Py("mac_roman"),
        "cp852" => Codec::Py("cp852"),
        "latin7" => Codec::Py("iso8859_13"),
        "cp1251" => Codec::Py("cp1251"),
        "utf16le" => Codec::Py("utf-16-le"),
        "cp1256" => Codec::Py("cp1256"),
        "cp1257" => Codec::Py("cp1257"),
        "utf32" => Codec::Py("utf-32-be"),
        "cp932" => Codec::Py("cp932"),
        "gb18030" => Codec::Py("gb18030"),
        _ => Codec::Utf8,
    }
}

/// How one column's value is read from a row image (``column_decoder``).
#[derive(Clone, Debug)]
pub enum Kind {
    Int {
        bytes: u8,
        unsigned: bool,
    },
    Float,
    Double,
    Decimal {
        p: u8,
        s: u8,
        size: usize,
    },
    Year,
    Date,
    Time,
    DateTime,
    Timestamp,
    Timestamp2(u8),
    DateTime2(u8),
    Time2(u8),
    /// MariaDB 5.3 TIME/DATETIME/TIMESTAMP(n) (``make_mariadb_hires``): digits known from a schema
    HiresTime(u8),
    HiresDateTime(u8),
    HiresTimestamp(u8),
    /// length-prefixed text or bytes; ``pad``: BINARY(n) padded back to n bytes
    Str {
        len_bytes: u8,
        codec: Codec,
        pad: Option<usize>,
    },
    Enum {
        pack: u8,
        names: Option<Rc<Vec<Vec<u8>>>>,
    },
    Set {
        pack: u8,
        names: Option<Rc<Vec<Vec<u8>>>>,
    },
    Bit {
        nbytes: usize,
    },
    Json {
        len_bytes: u8,
    },
    Geometry {
        len_bytes: u8,
    },
    Vector {
        len_bytes: u8,
    },
    Null,
    /// the Python decoder's column decoder raises (invalid metadata, a type no row image holds)
    Fail,
}

/// The silver (typed) column type (``binlake.pipeline.types.silver_type``) as an Arrow type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Silver {
    I8,
    I16,
    I32,
    I64,
    Dec(u8, u8),
    F32,
    F64,
    Date,
    TsNtz,
    TsUtc,
    Str,
    Bin,
    VecF32,
}

impl Silver {
    pub fn format(&self) -> String {
        match self {
            Silver::I8 => "c".into(),
            Silver::I16 => "s".into(),
            Silver::I32 => "i".into(),
            Silver::I64 => "l".into(),
            Silver::Dec(p, s) => format!("d:{},{}", p, s),
            Silver::F32 => "f".into(),
            Silver::F64 => "g".into(),
            Silver::Date => "tdD".into(),
            Silver::TsNtz => "tsu:".into(),
            Silver::TsUtc => "tsu:UTC".into(),
            Silver::Str => "U".into(),
            Silver::Bin => "Z".into(),
            Silver::VecF32 => "+l".into(),
        }
    }
}

#[derive(Debug)]
pub struct Column {
    pub name: Vec<u8>,
    pub type_code: u8,
    pub real_type: u8,
    pub meta: u16,
    pub unsigned: bool,
    pub collation: Option<u64>,
    pub kind: Kind,
}

pub struct Plan {
    pub idx: Vec<u32>,
    pub null_bytes: usize,
}

pub struct Layout {
    pub table_id: u64,
    pub db: Vec<u8>,
    pub table: Vec<u8>,
    pub columns: Vec<Column>,
    pub json_columns: Vec<u32>,
    pub assumptions: Vec<String>,
    pub primary_key: Option<Vec<u32>>,
    pub dup_names: bool,
    /// ``"name": `` of each column as ``binlake rows`` writes it (UTF-8 form), and whether the db, table and
    /// every column name are UTF-8 (else lines holding them are written in the ASCII form)
    pub json_keys: Vec<Vec<u8>>,
    pub names_utf8: bool,
    /// the TABLE_MAP event's bytes (header included) and body end: the Python decoder rebuilds the layout from
    /// them when it must name an error of a rows event
    pub raw: Vec<u8>,
    pub body_end: usize,
    plans: RefCell<HashMap<Vec<u8>, Rc<Plan>>>,
}

const MAX_PLANS: usize = 256;

impl Layout {
    /// The present columns of an image with this columns-present bitmap (``TableLayout.plan``).
    pub fn plan(&self, present: &[u8]) -> Rc<Plan> {
        if let Some(p) = self.plans.borrow().get(present) {
            return p.clone();
        }
        let n = self.columns.len().min(present.len() * 8);
        let idx: Vec<u32> = (0..n)
            .filter(|&i| present[i >> 3] & (1 << (i & 7)) != 0)
            .map(|i| i as u32)
            .collect();
        let plan = Rc::new(Plan {
            null_bytes: (idx.len() + 7) >> 3,
            idx,
        });
        let mut plans = self.plans.borrow_mut();
        if plans.len() < MAX_PLANS {
            plans.insert(present.to_vec(), plan.clone());
        }
        plan
    }

    pub fn silver(&self, i: usize, temporal_text: bool) -> Silver {
        let c = &self.columns[i];
        let (t, md) = (c.type_code, c.meta as u32);
        match t {
            T_TINY => {
                if c.unsigned {
                    Silver::I16
                } else {
                    Silver::I8
                }
            }
            T_SHORT => {
                if c.unsigned {
                    Silver::I32
                } else {
                    Silver::I16
                }
            }
            T_INT24 => Silver::I32,
            T_LONG => {
                if c.unsigned {
                    Silver::I64
                } else {
                    Silver::I32
                }
            }
            T_LONGLONG => {
                if c.unsigned {
                    Silver::Dec(20, 0)
                } else {
                    Silver::I64
                }
            }
            T_YEAR => Silver::I16,
            T_BIT => {
                if (md >> 8) * 8 + (md & 0xFF) <= 63 {
                    Silver::I64
                } else {
                    Silver::Bin
                }
            }
            T_FLOAT => Silver::F32,
            T_DOUBLE => Silver::F64,
            T_NEWDECIMAL => {
                let (p, s) = (md >> 8, md & 0xFF);
                if (1..=38).contains(&p) && s <= p {
                    Silver::Dec(p as u8, s as u8)
                } else {
                    Silver::Str
                }
            }
            T_DATE | T_NEWDATE if !temporal_text => Silver::Date,
            T_DATETIME | T_DATETIME2 if !temporal_text => Silver::TsNtz,
            T_TIMESTAMP | T_TIMESTAMP2 if !temporal_text => Silver::TsUtc,
            T_VECTOR => Silver::VecF32,
            T_GEOMETRY => Silver::Bin,
            _ if is_character(c.real_type) => {
                if c.collation.is_some() && collation_codec(c.collation) != Codec::Binary {
                    Silver::Str
                } else {
                    Silver::Bin
                }
            }
            _ => Silver::Str,
        }
    }
}

/// ``string_real_type``: (real type, max byte length or ENUM/SET pack length) of a MYSQL_TYPE_STRING column.
fn string_real_type(meta: u16) -> (u8, u32) {
    let (b0, b1) = ((meta >> 8) as u8, (meta & 0xFF) as u32);
    if b0 != 0 && (b0 & 0x30) != 0x30 {
        (b0 | 0x30, ((((b0 & 0x30) ^ 0x30) as u32) << 4) | b1)
    } else {
        (if b0 != 0 { b0 } else { T_STRING }, b1)
    }
}

#[allow(clippy::too_many_arguments)]
fn kind_of(
    t: u8,
    meta: u16,
    unsigned: bool,
    codec: Codec,
    enum_names: Option<Rc<Vec<Vec<u8>>>>,
    set_names: Option<Rc<Vec<Vec<u8>>>>,
    hires: u8,
) -> Kind {
    if hires > 0 && matches!(t, T_TIME | T_DATETIME | T_TIMESTAMP) {
        return match (hires, t) {
            (7.., _) => Kind::Fail,
            (f, T_TIME) => Kind::HiresTime(f),
            (f, T_DATETIME) => Kind::HiresDateTime(f),
            (f, _) => Kind::HiresTimestamp(f),
        };
    }
    let len1or2 = |max_len: u32| if max_len < 256 { 1 } else { 2 };
    let fsp_ok = |fsp: u16| fsp <= 6;
    let blob_len = |m: u16| (1..=4).contains(&m);
    match t {
        T_TINY => Kind::Int { bytes: 1, unsigned },
        T_SHORT => Kind::Int { bytes: 2, unsigned },
        T_INT24 => Kind::Int { bytes: 3, unsigned },
        T_LONG => Kind::Int { bytes: 4, unsigned },
        T_LONGLONG => Kind::Int { bytes: 8, unsigned },
        T_FLOAT => Kind::Float,
        T_DOUBLE => Kind::Double,
        T_NEWDECIMAL => {
            let (p, s) = ((meta >> 8) as u32, (meta & 0xFF) as u32);
            if !(p > 0 && p <= 65 && s <= 30 && s <= p) {
                return Kind::Fail;
            }
            Kind::Decimal {
                p: p as u8,
                s: s as u8,
                size: crate::fmt::decimal_size(p, s),
            }
        }
        T_YEAR => Kind::Year,
        T_DATE | T_NEWDATE => Kind::Date,
        T_TIME => Kind::Time,
        T_DATETIME => Kind::DateTime,
        T_TIMESTAMP => Kind::Timestamp,
        T_TIMESTAMP2 if fsp_ok(meta) => Kind::Timestamp2(meta as u8),
        T_DATETIME2 if fsp_ok(meta) => Kind::DateTime2(meta as u8),
        T_TIME2 if fsp_ok(meta) => Kind::Time2(meta as u8),
        T_VARCHAR | T_VAR_STRING => Kind::Str {
            len_bytes: len1or2(meta as u32),
            codec,
            pad: None,
        },
        T_STRING => {
            let (real, length) = string_real_type(meta);
            match real {
                T_ENUM => enum_kind(length, enum_names),
                T_SET => set_kind(length, set_names),
                _ => {
                    let pad = (codec == Codec::Binary).then_some(length as usize);
                    Kind::Str {
                        len_bytes: len1or2(length),
                        codec,
                        pad,
                    }
                }
            }
        }
        T_ENUM => enum_kind((meta & 0xFF) as u32, enum_names),
        T_SET => set_kind((meta & 0xFF) as u32, set_names),
        T_BIT => Kind::Bit {
            nbytes: (meta >> 8) as usize + if meta & 0xFF != 0 { 1 } else { 0 },
        },
        T_BLOB | T_TINY_BLOB | T_MEDIUM_BLOB | T_LONG_BLOB if blob_len(meta) => Kind::Str {
            len_bytes: meta as u8,
            codec,
            pad: None,
        },
        T_JSON if blob_len(meta) => Kind::Json {
            len_bytes: meta as u8,
        },
        T_GEOMETRY if blob_len(meta) => Kind::Geometry {
            len_bytes: meta as u8,
        },
        T_VECTOR if blob_len(meta) => Kind::Vector {
            len_bytes: meta as u8,
        },
        T_NULL => Kind::Null,
        _ => Kind::Fail,
    }
}

fn enum_kind(pack: u32, names: Option<Rc<Vec<Vec<u8>>>>) -> Kind {
    if pack == 1 || pack == 2 {
        Kind::Enum {
            pack: pack as u8,
            names,
        }
    } else {
        Kind::Fail
    }
}

fn set_kind(pack: u32, names: Option<Rc<Vec<Vec<u8>>>>) -> Kind {
    if (1..=8).contains(&pack) {
        Kind::Set {
            pack: pack as u8,
            names,
        }
    } else {
        Kind::Fail
    }
}

struct DefaultCharset {
    default: u64,
    overrides: Vec<(u64, u64)>,
}

#[derive(Default)]
struct Optional {
    signedness: Option<Vec<bool>>,
    default_charset: Option<DefaultCharset>,
    column_charsets: Option<Vec<u64>>,
    names: Option<Vec<Vec<u8>>>,
    set_values: Option<Vec<Vec<Vec<u8>>>>,
    enum_values: Option<Vec<Vec<Vec<u8>>>>,
    simple_pk: Option<Vec<u64>>,
    pk_prefix: Option<Vec<u64>>,
    es_default_charset: Option<DefaultCharset>,
    es_column_charsets: Option<Vec<u64>>,
}

fn packed_list(c: &mut Cur) -> R<Vec<u64>> {
    let mut out = Vec::new();
    while c.remaining() > 0 {
        out.push(c.packed()?);
    }
    Ok(out)
}

fn default_charset(c: &mut Cur) -> R<DefaultCharset> {
    let default = c.packed()?;
    let mut overrides = Vec::new();
    while c.remaining() > 0 {
        overrides.push((c.packed()?, c.packed()?));
    }
    Ok(DefaultCharset { default, overrides })
}

fn str_value_lists(c: &mut Cur) -> R<Vec<Vec<Vec<u8>>>> {
    let mut out = Vec::new();
    while c.remaining() > 0 {
        let n = c.packed()?;
        if n > c.remaining() as u64 {
            return Err(());
        }
        let mut vals = Vec::with_capacity(n as usize);
        for _ in 0..n {
            vals.push(c.packed_bytes()?.to_vec());
        }
        out.push(vals);
    }
    Ok(out)
}

fn bits_msb(data: &[u8], count: usize) -> Vec<bool> {
    (0..count.min(data.len() * 8))
        .map(|i| data[i >> 3] & (0x80 >> (i & 7)) != 0)
        .collect()
}

/// A primary key's column indexes: each names one of the ``count`` columns (else the Python decoder's
/// CorruptEventError at the TABLE_MAP).
fn key_columns(indexes: Vec<u64>, count: usize) -> R<Vec<u64>> {
    if indexes.iter().any(|&i| i >= count as u64) {
        return Err(());
    }
    Ok(indexes)
}

fn optional_metadata(c: &mut Cur, types: &[u8]) -> R<Optional> {
    let n_numeric = types.iter().filter(|&&t| is_numeric(t)).count();
    let mut o = Optional::default();
    while c.remaining() > 0 {
        let ftype = c.u8()?;
        let value = c.packed_bytes()?;
        let mut f = Cur::new(value, 0, value.len());
        match ftype {
            1 => o.signedness = Some(bits_msb(value, n_numeric)),
            2 => o.default_charset = Some(default_charset(&mut f)?),
            3 => o.column_charsets = Some(packed_list(&mut f)?),
            4 => {
                let mut names = Vec::new();
                while f.remaining() > 0 {
                    names.push(f.packed_bytes()?.to_vec());
                }
                o.names = Some(names);
            }
            5 => o.set_values = Some(str_value_lists(&mut f)?),
            6 => o.enum_values = Some(str_value_lists(&mut f)?),
            7 | 13 => {
                packed_list(&mut f)?;
            }
            8 => o.simple_pk = Some(key_columns(packed_list(&mut f)?, types.len())?),
            9 => {
                let flat = packed_list(&mut f)?;
                if flat.len() % 2 == 1 {
                    return Err(());
                }
                o.pk_prefix = Some(key_columns(
                    flat.iter().step_by(2).copied().collect(),
                    types.len(),
                )?);
            }
            10 => o.es_default_charset = Some(default_charset(&mut f)?),
            11 => o.es_column_charsets = Some(packed_list(&mut f)?),
            _ => {}
        }
    }
    Ok(o)
}

fn expand_charsets(
    default: Option<&DefaultCharset>,
    per_column: Option<&Vec<u64>>,
    count: usize,
) -> Option<Vec<u64>> {
    if let Some(p) = per_column {
        return (p.len() == count).then(|| p.clone());
    }
    let d = default?;
    let mut out = vec![d.default; count];
    for &(idx, coll) in &d.overrides {
        if (idx as usize) < count {
            out[idx as usize] = coll;
        }
    }
    Some(out)
}

const OLD_TEMPORAL_HINT: &str = "TIME/DATETIME/TIMESTAMP columns are read in the classic format; MariaDB's 5.3 \
format (mysql56_temporal_format=OFF) with fractional seconds needs their digits from a schema (ColumnInfo.fsp)";

/// One column of a schema provider's table definition (``binlake.binlog.schema.ColumnInfo``).
pub struct SchemaColumn {
    pub name: Vec<u8>,
    pub unsigned: bool,
    pub collation: Option<u64>,
    pub enum_values: Option<Vec<Vec<u8>>>,
    pub set_values: Option<Vec<Vec<u8>>>,
    pub fsp: Option<u8>,
}

/// What fills a TABLE_MAP's missing metadata: ``schema(db, table, column types)`` -> the provider's columns
/// (None: it knows no such table; ``Err``: it raises, the Python decoder names the error).
pub type SchemaLookup<'s> = dyn FnMut(&[u8], &[u8], &[u8]) -> R<Option<Vec<SchemaColumn>>> + 's;

/// Decode a TABLE_MAP body (``buf[pos..end]``) and build its layout. ``post_len``: the FORMAT_DESCRIPTION's
/// post-header length for TABLE_MAP (8 when none says).
pub fn table_map(
    buf: &[u8],
    pos: usize,
    end: usize,
    post_len: u8,
    mariadb: bool,
    schema: &mut SchemaLookup,
) -> R<Layout> {
    let mut c = Cur::new(buf, pos, end);
    let id_size = if post_len == 6 { 4 } else { 6 };
    let table_id = c.uint(id_size)?;
    c.u16()?;
    if post_len as usize > id_size + 2 {
        c.skip((post_len as usize - id_size - 2) as u64)?;
    }
    let n = c.u8()? as u64;
    let db = c.bytes(n)?.to_vec();
    c.skip(1)?;
    let n = c.u8()? as u64;
    let table = c.bytes(n)?.to_vec();
    c.skip(1)?;
    let ncols = c.packed()?;
    let types = c.bytes(ncols)?.to_vec();
    let meta_len = c.packed()?;
    let meta_bytes = c.bytes(meta_len)?;
    let mut mc = Cur::new(meta_bytes, 0, meta_bytes.len());
    let mut metas = Vec::with_capacity(types.len());
    for &t in &types {
        metas.push(match t {
            T_FLOAT | T_DOUBLE | T_BLOB | T_TINY_BLOB | T_MEDIUM_BLOB | T_LONG_BLOB
            | T_GEOMETRY | T_JSON | T_TIME2 | T_DATETIME2 | T_TIMESTAMP2 | T_VECTOR => {
                mc.u8()? as u16
            }
            T_VARCHAR | T_VAR_STRING | T_BIT => mc.u16()?,
            T_STRING | T_NEWDECIMAL | T_ENUM | T_SET => (mc.u8()? as u16) << 8 | mc.u8()? as u16,
            _ => 0,
        });
    }
    if mc.pos != meta_bytes.len() {
        return Err(());
    }
    c.skip((types.len() as u64 + 7) >> 3)?;
    let o = if c.remaining() > 0 {
        optional_metadata(&mut c, &types)?
    } else {
        Optional::default()
    };
    let old_temporals = types
        .iter()
        .any(|&t| matches!(t, T_TIME | T_DATETIME | T_TIMESTAMP));
    let need_schema = o.names.is_none()
        || o.signedness.is_none()
        || (o.default_charset.is_none() && o.column_charsets.is_none())
        || old_temporals;
    let sc = if need_schema {
        schema(&db, &table, &types)?
    } else {
        None
    };
    if sc.as_ref().is_some_and(|sc| sc.len() != types.len()) {
        return Err(()); // SchemaMismatchError
    }
    Ok(build(table_id, db, table, &types, &metas, o, mariadb, sc))
}

#[allow(clippy::too_many_arguments)]
fn build(
    table_id: u64,
    db: Vec<u8>,
    table: Vec<u8>,
    types: &[u8],
    metas: &[u16],
    o: Optional,
    mariadb: bool,
    sc: Option<Vec<SchemaColumn>>,
) -> Layout {
    let n = types.len();
    let reals: Vec<u8> = types
        .iter()
        .zip(metas)
        .map(|(&t, &m)| {
            if t == T_STRING {
                string_real_type(m).0
            } else {
                t
            }
        })
        .collect();
    let mut assumptions = Vec::new();
    let names: Vec<Vec<u8>> = match o.names {
        Some(ref names) if names.len() == n => names.clone(),
        _ if sc.is_some() => sc
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| c.name.clone())
            .collect(),
        _ => {
            assumptions.push("column names unknown: named @1..@n".to_string());
            (1..=n).map(|i| format!("@{}", i).into_bytes()).collect()
        }
    };
    let numeric: Vec<usize> = (0..n).filter(|&i| is_numeric(types[i])).collect();
    let mut unsigned = vec![false; n];
    match o.signedness {
        Some(ref s) => {
            for (k, &i) in numeric.iter().enumerate() {
                if k < s.len() {
                    unsigned[i] = s[k];
                }
            }
        }
        None => match sc {
            Some(ref sc) => unsigned = sc.iter().map(|c| c.unsigned).collect(),
            None if !numeric.is_empty() => {
                assumptions.push("signedness unknown: integers read as signed".into())
            }
            None => {}
        },
    }
    let numbered = |t: u8| {
        is_character(t)
            || if mariadb {
                t == T_GEOMETRY
            } else {
                t == T_VECTOR
            }
    };
    let binary_numbered = |t: u8| numbered(t) && !is_character(t);
    let mut char_cols: Vec<usize> = (0..n).filter(|&i| numbered(reals[i])).collect();
    let enum_set_cols: Vec<usize> = (0..n)
        .filter(|&i| reals[i] == T_ENUM || reals[i] == T_SET)
        .collect();
    let mut collations: Vec<Option<u64>> = vec![None; n];
    let mut got = expand_charsets(
        o.default_charset.as_ref(),
        o.column_charsets.as_ref(),
        char_cols.len(),
    );
    if got.is_none() && o.column_charsets.is_some() {
        char_cols.retain(|&i| !binary_numbered(reals[i]));
        got = expand_charsets(None, o.column_charsets.as_ref(), char_cols.len());
    }
    match got {
        Some(g) => {
            for (&i, &coll) in char_cols.iter().zip(&g) {
                if !binary_numbered(reals[i]) {
                    collations[i] = Some(coll);
                }
            }
        }
        None if sc.is_some() => {
            let sc = sc.as_ref().unwrap();
            for &i in &char_cols {
                if !binary_numbered(reals[i]) {
                    collations[i] = Some(sc[i].collation.unwrap_or(63));
                }
            }
        }
        None => {
            char_cols.retain(|&i| !binary_numbered(reals[i]));
            for &i in &char_cols {
                let blob = !matches!(reals[i], T_STRING | T_VARCHAR | T_VAR_STRING);
                collations[i] = Some(if blob { 63 } else { 45 });
            }
            if !char_cols.is_empty() {
                assumptions.push(
                    "charsets unknown: CHAR/VARCHAR read as UTF-8, BLOB/TEXT as bytes".into(),
                );
            }
        }
    }
    if let Some(g) = expand_charsets(
        o.es_default_charset.as_ref(),
        o.es_column_charsets.as_ref(),
        enum_set_cols.len(),
    ) {
        for (&i, &coll) in enum_set_cols.iter().zip(&g) {
            collations[i] = Some(coll);
        }
    }
    let mut enum_names: Vec<Option<Rc<Vec<Vec<u8>>>>> = vec![None; n];
    let mut set_names: Vec<Option<Rc<Vec<Vec<u8>>>>> = vec![None; n];
    let enum_cols: Vec<usize> = (0..n).filter(|&i| reals[i] == T_ENUM).collect();
    let set_cols: Vec<usize> = (0..n).filter(|&i| reals[i] == T_SET).collect();
    match o.enum_values {
        Some(ref v) if v.len() == enum_cols.len() => {
            for (&i, vals) in enum_cols.iter().zip(v) {
                enum_names[i] = Some(Rc::new(vals.clone()));
            }
        }
        _ => {
            if let Some(ref sc) = sc {
                for &i in &enum_cols {
                    enum_names[i] = sc[i].enum_values.clone().map(Rc::new);
                }
            }
        }
    }
    match o.set_values {
        Some(ref v) if v.len() == set_cols.len() => {
            for (&i, vals) in set_cols.iter().zip(v) {
                set_names[i] = Some(Rc::new(vals.clone()));
            }
        }
        _ => {
            if let Some(ref sc) = sc {
                for &i in &set_cols {
                    set_names[i] = sc[i].set_values.clone().map(Rc::new);
                }
            }
        }
    }
    let mut hires = vec![0u8; n];
    if types
        .iter()
        .any(|&t| matches!(t, T_TIME | T_DATETIME | T_TIMESTAMP))
    {
        match sc {
            Some(ref sc) => {
                for i in (0..n).filter(|&i| matches!(types[i], T_TIME | T_DATETIME | T_TIMESTAMP)) {
                    hires[i] = sc[i].fsp.unwrap_or(0);
                }
            }
            None => assumptions.push(OLD_TEMPORAL_HINT.into()),
        }
    }
    let columns: Vec<Column> = (0..n)
        .map(|i| {
            let codec = if is_character(reals[i]) {
                collation_codec(collations[i])
            } else {
                Codec::Binary
            };
            let kind = kind_of(
                types[i],
                metas[i],
                unsigned[i],
                codec,
                enum_names[i].clone(),
                set_names[i].clone(),
                hires[i],
            );
            Column {
                name: names[i].clone(),
                type_code: types[i],
                real_type: reals[i],
                meta: metas[i],
                unsigned: unsigned[i],
                collation: collations[i],
                kind,
            }
        })
        .collect();
    let pk = o
        .simple_pk
        .filter(|v| !v.is_empty())
        .or(o.pk_prefix.filter(|v| !v.is_empty()));
    let mut sorted = names.clone();
    sorted.sort();
    let dup_names = sorted.windows(2).any(|w| w[0] == w[1]);
    let names_utf8 = [&db, &table]
        .into_iter()
        .chain(names.iter())
        .all(|n| std::str::from_utf8(n).is_ok());
    Layout {
        table_id,
        db,
        table,
        json_columns: (0..n)
            .filter(|&i| types[i] == T_JSON)
            .map(|i| i as u32)
            .collect(),
        columns,
        assumptions,
        primary_key: pk.map(|v| v.into_iter().map(|i| i as u32).collect()),
        dup_names,
        raw: Vec::new(),
        body_end: 0,
        plans: RefCell::new(HashMap::new()),
        json_keys: names
            .iter()
            .map(|n| {
                let mut k = Vec::with_capacity(n.len() + 4);
                crate::fmt::json_str(n, false, &mut k);
                k.extend_from_slice(b": ");
                k
            })
            .collect(),
        names_utf8,
    }
}
