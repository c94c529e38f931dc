//! Columnar batches: per table, Arrow arrays built row by row (values typed as silver types them,
//! ``binlake.pipeline.types``), handed to Python through the Arrow C data interface (``ArrowSchema`` /
//! ``ArrowArray`` in PyCapsules, the ``__arrow_c_array__`` protocol). The layout is documented in
//! ``binlake.binlog.columnar``.

use crate::engine::{Processor, RowsEvent, Sink};
use crate::fmt;
use crate::jsonl::{diff_items, op_of, value_error};
use crate::layout::{Layout, Silver};
use crate::reader::Fail;
use crate::rows::{Cell, Val};
use crate::values::{bit_digits, enum_set_bytes, push_hex_object, text_bytes, text_of};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyList, PyTuple};
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CString};
use std::rc::Rc;

// --- Arrow C data interface ----------------------------------------------------------------------------------

#[repr(C)]
pub struct ArrowSchema {
    format: *const c_char,
    name: *const c_char,
    metadata: *const c_char,
    flags: i64,
    n_children: i64,
    children: *mut *mut ArrowSchema,
    dictionary: *mut ArrowSchema,
    release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    private_data: *mut c_void,
}

#[repr(C)]
pub struct ArrowArray {
    length: i64,
    null_count: i64,
    offset: i64,
    n_buffers: i64,
    n_children: i64,
    buffers: *mut *const c_void,
    children: *mut *mut ArrowArray,
    dictionary: *mut ArrowArray,
    release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    private_data: *mut c_void,
}

struct SendSchema(ArrowSchema);
struct SendArray(ArrowArray);
unsafe impl Send for SendSchema {}
unsafe impl Send for SendArray {}

/// An owned buffer of naturally aligned values.
pub enum Buf {
    U8(Vec<u8>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    I128(Vec<i128>),
}

impl Buf {
    fn ptr(&self) -> *const c_void {
        match self {
            Buf::U8(v) => v.as_ptr() as _,
            Buf::I8(v) => v.as_ptr() as _,
            Buf::I16(v) => v.as_ptr() as _,
            Buf::I32(v) => v.as_ptr() as _,
            Buf::I64(v) => v.as_ptr() as _,
            Buf::F32(v) => v.as_ptr() as _,
            Buf::F64(v) => v.as_ptr() as _,
            Buf::I128(v) => v.as_ptr() as _,
        }
    }
}

/// One array (and its field) before export.
pub struct Node {
    format: String,
    name: String,
    nullable: bool,
    len: usize,
    null_count: usize,
    buffers: Vec<Option<Buf>>,
    children: Vec<Node>,
}

struct SchemaPrivate {
    _format: CString,
    _name: CString,
    children: Vec<*mut ArrowSchema>,
}

struct ArrayPrivate {
    _buffers: Vec<Option<Buf>>,
    _ptrs: Vec<*const c_void>,
    children: Vec<*mut ArrowArray>,
}

unsafe extern "C" fn release_schema(s: *mut ArrowSchema) {
    if s.is_null() || (*s).release.is_none() {
        return;
    }
    let private = Box::from_raw((*s).private_data as *mut SchemaPrivate);
    for &c in &private.children {
        if let Some(r) = (*c).release {
            r(c);
        }
        drop(Box::from_raw(c));
    }
    drop(private);
    (*s).release = None;
}

unsafe extern "C" fn release_array(a: *mut ArrowArray) {
    if a.is_null() || (*a).release.is_none() {
        return;
    }
    let private = Box::from_raw((*a).private_data as *mut ArrayPrivate);
    for &c in &private.children {
        if let Some(r) = (*c).release {
            r(c);
        }
        drop(Box::from_raw(c));
    }
    drop(private);
    (*a).release = None;
}

fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap()
}

impl Node {
    fn schema(&self) -> ArrowSchema {
        let children: Vec<*mut ArrowSchema> = self
            .children
            .iter()
            .map(|c| Box::into_raw(Box::new(c.schema())))
            .collect();
        let mut private = Box::new(SchemaPrivate {
            _format: c_string(&self.format),
            _name: c_string(&self.name),
            children,
        });
        ArrowSchema {
            format: private._format.as_ptr(),
            name: private._name.as_ptr(),
            metadata: std::ptr::null(),
            flags: if self.nullable { 2 } else { 0 },
            n_children: private.children.len() as i64,
            children: private.children.as_mut_ptr(),
            dictionary: std::ptr::null_mut(),
            release: Some(release_schema),
            private_data: Box::into_raw(private) as *mut c_void,
        }
    }

    fn array(self) -> ArrowArray {
        let children: Vec<*mut ArrowArray> = self
            .children
            .into_iter()
            .map(|c| Box::into_raw(Box::new(c.array())))
            .collect();
        let ptrs: Vec<*const c_void> = self
            .buffers
            .iter()
            .map(|b| b.as_ref().map_or(std::ptr::null(), |b| b.ptr()))
            .collect();
        let mut private = Box::new(ArrayPrivate {
            _buffers: self.buffers,
            _ptrs: ptrs,
            children,
        });
        ArrowArray {
            length: self.len as i64,
            null_count: self.null_count as i64,
            offset: 0,
            n_buffers: private._ptrs.len() as i64,
            n_children: private.children.len() as i64,
            buffers: private._ptrs.as_mut_ptr(),
            children: private.children.as_mut_ptr(),
            dictionary: std::ptr::null_mut(),
            release: Some(release_array),
            private_data: Box::into_raw(private) as *mut c_void,
        }
    }
}

/// A struct array (a record batch) of ``children``, each ``len`` long.
pub fn struct_node(children: Vec<Node>, len: usize) -> Node {
    Node {
        format: "+s".into(),
        name: String::new(),
        nullable: false,
        len,
        null_count: 0,
        buffers: vec![None],
        children,
    }
}

/// (schema capsule, array capsule) of a struct array: what ``__arrow_c_array__`` returns.
pub fn capsules<'py>(py: Python<'py>, node: Node) -> PyResult<Bound<'py, PyTuple>> {
    let schema = SendSchema(node.schema());
    let array = SendArray(node.array());
    let s = PyCapsule::new_with_destructor(
        py,
        schema,
        Some(c"arrow_schema".to_owned()),
        |mut s: SendSchema, _| unsafe {
            if let Some(r) = s.0.release {
                r(&mut s.0);
            }
        },
    )?;
    let a = PyCapsule::new_with_destructor(
        py,
        array,
        Some(c"arrow_array".to_owned()),
        |mut a: SendArray, _| unsafe {
            if let Some(r) = a.0.release {
                r(&mut a.0);
            }
        },
    )?;
    PyTuple::new(py, [s.into_any(), a.into_any()])
}

// --- builders ------------------------------------------------------------------------------------------------

#[derive(Default)]
struct Validity {
    bits: Vec<u8>,
    len: usize,
    nulls: usize,
}

impl Validity {
    fn push(&mut self, valid: bool) {
        if self.len.is_multiple_of(8) {
            self.bits.push(0);
        }
        if valid {
            *self.bits.last_mut().unwrap() |= 1 << (self.len % 8);
        } else {
            self.nulls += 1;
        }
        self.len += 1;
    }
    fn set(&mut self, i: usize) {
        if self.bits[i / 8] & (1 << (i % 8)) == 0 {
            self.bits[i / 8] |= 1 << (i % 8);
            self.nulls -= 1;
        }
    }
    fn take(&mut self) -> Option<Buf> {
        let nulls = self.nulls;
        let bits = std::mem::take(&mut self.bits);
        self.len = 0;
        self.nulls = 0;
        (nulls > 0).then_some(Buf::U8(bits))
    }
}

enum Data {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    I128(Vec<i128>),
    Var { offsets: Vec<i64>, bytes: Vec<u8> },
    List { offsets: Vec<i32>, values: Vec<f32> },
}

pub(crate) struct Col {
    format: String,
    name: String,
    valid: Validity,
    data: Data,
}

impl Col {
    pub(crate) fn new(name: &str, format: String) -> Col {
        Col::with_capacity(name, format, 0)
    }
    /// A column with room for ``cap`` values (a table's previous batch size: no regrowth).
    fn with_capacity(name: &str, format: String, cap: usize) -> Col {
        let offsets = || {
            let mut o = Vec::with_capacity(cap + 1);
            o.push(0i64);
            o
        };
        let data = match format.as_str() {
            "c" => Data::I8(Vec::with_capacity(cap)),
            "s" => Data::I16(Vec::with_capacity(cap)),
            "i" | "tdD" => Data::I32(Vec::with_capacity(cap)),
            "l" | "tsu:" | "tsu:UTC" => Data::I64(Vec::with_capacity(cap)),
            "f" => Data::F32(Vec::with_capacity(cap)),
            "g" => Data::F64(Vec::with_capacity(cap)),
            "+l" => Data::List {
                offsets: vec![0],
                values: Vec::new(),
            },
            f if f.starts_with("d:") => Data::I128(Vec::with_capacity(cap)),
            _ => Data::Var {
                offsets: offsets(),
                bytes: Vec::with_capacity(cap * 8),
            },
        };
        Col {
            format,
            name: name.to_string(),
            valid: Validity {
                bits: Vec::with_capacity(cap / 8 + 1),
                len: 0,
                nulls: 0,
            },
            data,
        }
    }
    pub(crate) fn null(&mut self) {
        self.valid.push(false);
        match &mut self.data {
            Data::I8(v) => v.push(0),
            Data::I16(v) => v.push(0),
            Data::I32(v) => v.push(0),
            Data::I64(v) => v.push(0),
            Data::F32(v) => v.push(0.0),
            Data::F64(v) => v.push(0.0),
            Data::I128(v) => v.push(0),
            Data::Var { offsets, bytes } => offsets.push(bytes.len() as i64),
            Data::List { offsets, values } => offsets.push(values.len() as i32),
        }
    }
    pub(crate) fn int(&mut self, x: i64) {
        self.valid.push(true);
        match &mut self.data {
            Data::I8(v) => v.push(x as i8),
            Data::I16(v) => v.push(x as i16),
            Data::I32(v) => v.push(x as i32),
            Data::I64(v) => v.push(x),
            _ => unreachable!(),
        }
    }
    pub(crate) fn float(&mut self, x: f32) {
        self.valid.push(true);
        if let Data::F32(v) = &mut self.data {
            v.push(x);
        }
    }
    pub(crate) fn double(&mut self, x: f64) {
        self.valid.push(true);
        if let Data::F64(v) = &mut self.data {
            v.push(x);
        }
    }
    pub(crate) fn decimal(&mut self, x: i128) {
        self.valid.push(true);
        if let Data::I128(v) = &mut self.data {
            v.push(x);
        }
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.valid.push(true);
        if let Data::Var { offsets, bytes } = &mut self.data {
            bytes.extend_from_slice(b);
            offsets.push(bytes.len() as i64);
        }
    }
    pub(crate) fn opt_str(&mut self, s: Option<&[u8]>) {
        match s {
            Some(s) => self.bytes(s),
            None => self.null(),
        }
    }
    pub(crate) fn node(&mut self) -> Node {
        let len = self.valid.len;
        let null_count = self.valid.nulls;
        let validity = self.valid.take();
        let (buffers, children) = match std::mem::replace(&mut self.data, Data::I8(Vec::new())) {
            Data::I8(v) => (vec![validity, Some(Buf::I8(v))], vec![]),
            Data::I16(v) => (vec![validity, Some(Buf::I16(v))], vec![]),
            Data::I32(v) => (vec![validity, Some(Buf::I32(v))], vec![]),
            Data::I64(v) => (vec![validity, Some(Buf::I64(v))], vec![]),
            Data::F32(v) => (vec![validity, Some(Buf::F32(v))], vec![]),
            Data::F64(v) => (vec![validity, Some(Buf::F64(v))], vec![]),
            Data::I128(v) => (vec![validity, Some(Buf::I128(v))], vec![]),
            // "u"/"z": utf8/binary with 32-bit offsets (the writer keeps a batch's bytes under 2 GiB)
            Data::Var { offsets, bytes } if matches!(self.format.as_str(), "u" | "z") => {
                let small = offsets.into_iter().map(|o| o as i32).collect();
                (
                    vec![validity, Some(Buf::I32(small)), Some(Buf::U8(bytes))],
                    vec![],
                )
            }
            Data::Var { offsets, bytes } => (
                vec![validity, Some(Buf::I64(offsets)), Some(Buf::U8(bytes))],
                vec![],
            ),
            Data::List { offsets, values } => {
                let n = values.len();
                let item = Node {
                    format: "f".into(),
                    name: "item".into(),
                    nullable: true,
                    len: n,
                    null_count: 0,
                    buffers: vec![None, Some(Buf::F32(values))],
                    children: vec![],
                };
                (vec![validity, Some(Buf::I32(offsets))], vec![item])
            }
        };
        Node {
            format: self.format.clone(),
            name: self.name.clone(),
            nullable: true,
            len,
            null_count,
            buffers,
            children,
        }
    }
}

/// A nullable struct column (a row image, or a diff entry) of child columns.
struct StructCol {
    name: String,
    valid: Validity,
    children: Vec<Col>,
}

impl StructCol {
    fn node(&mut self) -> Node {
        let len = self.valid.len;
        let null_count = self.valid.nulls;
        let validity = self.valid.take();
        Node {
            format: "+s".into(),
            name: self.name.clone(),
            nullable: true,
            len,
            null_count,
            buffers: vec![validity],
            children: self.children.iter_mut().map(|c| c.node()).collect(),
        }
    }
}

/// The Arrow field name of a column: its name when that is UTF-8 without NUL, else ``@<n>``.
pub fn field_name(raw: &[u8], i: usize) -> String {
    match std::str::from_utf8(raw) {
        Ok(s) if !s.contains('\0') => s.to_string(),
        _ => format!("@{}", i + 1),
    }
}

struct Buffer {
    layout: Rc<Layout>,
    kinds: Vec<Silver>,
    pos: Col,
    row: Col,
    op: Col,
    gtid: Col,
    trx_pos: Col,
    commit_ts: Col,
    event_type: Col,
    before: StructCol,
    before_present: Col,
    after: StructCol,
    after_present: Col,
    diffs_offsets: Vec<i32>,
    diffs_valid: Validity,
    diffs: StructCol,
    rows: usize,
    pending_from: Option<usize>,
}

impl Buffer {
    fn new(layout: Rc<Layout>, temporal_text: bool, cap: usize) -> Buffer {
        let kinds: Vec<Silver> = (0..layout.columns.len())
            .map(|i| layout.silver(i, temporal_text))
            .collect();
        let image = |name: &str| StructCol {
            name: name.into(),
            valid: Validity::default(),
            children: layout
                .columns
                .iter()
                .enumerate()
                .zip(&kinds)
                .map(|((i, c), k)| Col::with_capacity(&field_name(&c.name, i), k.format(), cap))
                .collect(),
        };
        let diffs = StructCol {
            name: "item".into(),
            valid: Validity::default(),
            children: ["column", "op", "path", "value"]
                .iter()
                .map(|n| Col::new(n, "U".into()))
                .collect(),
        };
        Buffer {
            pos: Col::new("pos", "l".into()),
            row: Col::new("row", "i".into()),
            op: Col::new("op", "U".into()),
            gtid: Col::new("gtid", "U".into()),
            trx_pos: Col::new("trx_pos", "l".into()),
            commit_ts: Col::new("commit_ts", "l".into()),
            event_type: Col::new("event_type", "i".into()),
            before: image("before"),
            before_present: Col::new("before_present", "Z".into()),
            after: image("after"),
            after_present: Col::new("after_present", "Z".into()),
            diffs_offsets: vec![0],
            diffs_valid: Validity::default(),
            diffs,
            kinds,
            layout,
            rows: 0,
            pending_from: None,
        }
    }

    fn finish(&mut self) -> Node {
        let diffs_item = self.diffs.node();
        let len = self.diffs_valid.len;
        let null_count = self.diffs_valid.nulls;
        let diffs = Node {
            format: "+l".into(),
            name: "diffs".into(),
            nullable: true,
            len,
            null_count,
            buffers: vec![
                self.diffs_valid.take(),
                Some(Buf::I32(std::mem::replace(
                    &mut self.diffs_offsets,
                    vec![0],
                ))),
            ],
            children: vec![diffs_item],
        };
        let children = vec![
            self.pos.node(),
            self.row.node(),
            self.op.node(),
            self.gtid.node(),
            self.trx_pos.node(),
            self.commit_ts.node(),
            self.event_type.node(),
            self.before.node(),
            self.before_present.node(),
            self.after.node(),
            self.after_present.node(),
            diffs,
        ];
        let rows = self.rows;
        self.rows = 0;
        Node {
            format: "+s".into(),
            name: String::new(),
            nullable: false,
            len: rows,
            null_count: 0,
            buffers: vec![None],
            children,
        }
    }
}

/// A ready batch: (db, table, layout, schema/array capsules).
pub struct Ready {
    pub layout: Rc<Layout>,
    pub node: Node,
}

pub struct ArrowSink {
    temporal_text: bool,
    /// rows of each table's last batch: the next one's buffers are made that large at once
    sizes: HashMap<(Vec<u8>, Vec<u8>), usize>,
    max_rows: usize,
    buffers: Vec<Buffer>,
    index: HashMap<*const Layout, usize>,
    pub total: usize,
    pub ready: Vec<Ready>,
}

/// The silver value of one cell, or why it has none: ``Err(None)`` a render error (as ``json_value``),
/// ``Err(Some(reason))`` a value out of the silver type's range.
fn put(
    col: &mut Col,
    kind: Silver,
    c: &Cell,
    layout: &Layout,
    d: &crate::rows::Decoded,
) -> Result<(), Option<String>> {
    let v = &c.val;
    if matches!(v, Val::Null | Val::Partial(_)) {
        col.null();
        return Ok(());
    }
    let column = &layout.columns[c.col as usize];
    let range = |what: String| Err(Some(what));
    match kind {
        Silver::I8 | Silver::I16 | Silver::I32 | Silver::I64 => {
            let x: i128 = match *v {
                Val::Int(x) => x as i128,
                Val::UInt(x) => x as i128,
                Val::Bit(raw) if raw.len() <= 8 => {
                    raw.iter().fold(0u64, |a, &b| a << 8 | b as u64) as i128
                }
                Val::Bit(raw) => return range(bit_digits(raw)),
                _ => return range("a value of another type".into()),
            };
            let (lo, hi): (i128, i128) = match kind {
                Silver::I8 => (i8::MIN as i128, i8::MAX as i128),
                Silver::I16 => (i16::MIN as i128, i16::MAX as i128),
                Silver::I32 => (i32::MIN as i128, i32::MAX as i128),
                _ => (i64::MIN as i128, i64::MAX as i128),
            };
            if x < lo || x > hi {
                return range(x.to_string());
            }
            col.int(x as i64);
        }
        Silver::Dec(p, s) => {
            if let (Val::UInt(x), 0) = (*v, s) {
                col.valid.push(true);
                if let Data::I128(vv) = &mut col.data {
                    vv.push(x as i128);
                }
                return Ok(());
            }
            if let Val::Decimal(raw, pp, ss) = *v {
                if let Some(x) =
                    fmt::decimal_i128(raw, pp as u32, ss as u32).filter(|_| ss == s && pp <= p)
                {
                    col.valid.push(true);
                    if let Data::I128(vv) = &mut col.data {
                        vv.push(x);
                    }
                    return Ok(());
                }
            }
            let (neg, coef) = match *v {
                Val::Decimal(raw, pp, ss) => fmt::decimal_value(raw, pp as u32, ss as u32),
                Val::UInt(x) => {
                    let mut b = fmt::BigDec::default();
                    b.mul_add(1, x);
                    (false, b)
                }
                _ => return range("a value of another type".into()),
            };
            let digits = coef.digits();
            let scale = match *v {
                Val::Decimal(_, _, ss) => ss,
                _ => 0,
            };
            if scale != s || (digits.trim_start_matches('0').len() > p as usize) {
                let mut t = String::new();
                fmt::decimal_text(neg, &coef, scale as u32, &mut t);
                return range(t);
            }
            let x = coef.to_i128().unwrap_or(0);
            col.valid.push(true);
            if let Data::I128(vv) = &mut col.data {
                vv.push(if neg { -x } else { x });
            }
        }
        Silver::F32 => {
            let Val::Float(bits) = *v else {
                return range("a value of another type".into());
            };
            if !f32::from_bits(bits).is_finite() {
                return Err(None);
            }
            col.valid.push(true);
            if let Data::F32(vv) = &mut col.data {
                vv.push(f32::from_bits(bits));
            }
        }
        Silver::F64 => {
            let Val::Double(x) = *v else {
                return range("a value of another type".into());
            };
            if !x.is_finite() {
                return Err(None);
            }
            col.valid.push(true);
            if let Data::F64(vv) = &mut col.data {
                vv.push(x);
            }
        }
        Silver::Date | Silver::TsNtz | Silver::TsUtc => {
            let fast = match *v {
                Val::Date(y, m, dd) if kind == Silver::Date => {
                    fmt::typed_fields(y as u64, m as u64, dd as u64, 0, 0, 0, 0, 0, false)
                }
                Val::DateTime {
                    y,
                    mo,
                    d: dd,
                    h,
                    mi,
                    s,
                    us,
                    fsp,
                } if kind != Silver::Date => fmt::typed_fields(
                    y as u64, mo as u64, dd as u64, h as u64, mi as u64, s as u64, us as u64, fsp,
                    true,
                ),
                Val::Timestamp { secs, us, fsp } if kind != Silver::Date => {
                    if secs == 0 && us == 0 {
                        Some(None)
                    } else if fsp == 0 {
                        Some(Some(secs as i64 * 1_000_000))
                    } else {
                        fmt::kept_micro(us as u64, fsp).map(|u| Some(secs as i64 * 1_000_000 + u))
                    }
                }
                _ => None,
            };
            if let Some(typed) = fast {
                match typed {
                    Some(x) => col.int(x),
                    None => col.null(),
                }
                return Ok(());
            }
            let mut t = String::new();
            if !text_of(v, &mut t) {
                return range("a value of another type".into());
            }
            if kind == Silver::Date {
                match fmt::typed_date(t.as_bytes()) {
                    Some(days) => col.int(days as i64),
                    None => col.null(),
                }
            } else {
                match fmt::typed_datetime(t.as_bytes()) {
                    Some(us) => col.int(us),
                    None => col.null(),
                }
            }
        }
        Silver::VecF32 => {
            let Val::Vector(raw) = *v else {
                return range("a value of another type".into());
            };
            let xs: Vec<f32> = raw
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            if xs.iter().any(|x| !x.is_finite()) {
                return Err(None);
            }
            col.valid.push(true);
            if let Data::List { offsets, values } = &mut col.data {
                values.extend_from_slice(&xs);
                offsets.push(values.len() as i32);
            }
        }
        Silver::Bin => match *v {
            Val::Bytes(raw) => col.bytes(raw),
            Val::Padded(raw, n) => {
                let mut b = raw.to_vec();
                b.resize(n, 0);
                col.bytes(&b);
            }
            Val::Bit(raw) => {
                let skip = raw.len().saturating_sub(8);
                if raw[..skip].iter().any(|&b| b != 0) {
                    return range(bit_digits(raw));
                }
                let mut b = vec![0u8; 8 - (raw.len() - skip)];
                b.extend_from_slice(&raw[skip..]);
                col.bytes(&b);
            }
            _ => return range("a value of another type".into()),
        },
        Silver::Str => {
            let Data::Var { offsets, bytes } = &mut col.data else {
                unreachable!()
            };
            let start = bytes.len();
            let mut t = String::new();
            match *v {
                Val::Text(raw) if std::str::from_utf8(raw).is_ok() => bytes.extend_from_slice(raw),
                Val::Text(raw) => hex_repr(raw, 0, bytes),
                Val::Enum(_) | Val::Set(_) => {
                    enum_set_bytes(column, v, bytes);
                    if std::str::from_utf8(&bytes[start..]).is_err() {
                        let raw = bytes.split_off(start);
                        hex_repr(&raw, 0, bytes);
                    }
                }
                Val::Int(x) => bytes.extend_from_slice(x.to_string().as_bytes()),
                Val::UInt(x) => bytes.extend_from_slice(x.to_string().as_bytes()),
                Val::Bytes(raw) => hex_repr(raw, 0, bytes),
                Val::Padded(raw, n) => hex_repr(raw, n, bytes),
                Val::Json(raw) => {
                    crate::json::json_text(raw, &mut t).map_err(|_| None)?;
                    bytes.extend_from_slice(t.as_bytes());
                }
                _ if text_of(v, &mut t) => bytes.extend_from_slice(t.as_bytes()),
                _ => {
                    let mut scratch = Vec::new();
                    match text_bytes(v, column, d, &mut scratch) {
                        Some(Ok(s)) => bytes.extend_from_slice(s),
                        Some(Err(raw)) => hex_repr(raw, 0, bytes),
                        None => return range("a value of another type".into()),
                    }
                }
            }
            offsets.push(bytes.len() as i64);
            col.valid.push(true);
        }
    }
    Ok(())
}

/// ``str({"hex": ...})``: what silver's string columns hold for bytes (``binlake.pipeline.types.to_silver``).
fn hex_repr(raw: &[u8], pad: usize, out: &mut Vec<u8>) {
    let mut tmp = Vec::new();
    push_hex_object(raw, pad, false, &mut tmp);
    let hex = &tmp[9..tmp.len() - 2];
    out.extend_from_slice(b"{'hex': '");
    out.extend_from_slice(hex);
    out.extend_from_slice(b"'}");
}

fn present_bitmap(layout: &Layout, cells: &[Cell]) -> Option<Vec<u8>> {
    let n = layout.columns.len();
    let present: Vec<u32> = cells
        .iter()
        .filter(|c| !matches!(c.val, Val::Partial(_)))
        .map(|c| c.col)
        .collect();
    if present.len() == n {
        return None;
    }
    let mut bits = vec![0u8; n.div_ceil(8)];
    for c in present {
        bits[c as usize / 8] |= 1 << (c % 8);
    }
    Some(bits)
}

impl ArrowSink {
    pub fn new(temporal_text: bool, max_rows: usize) -> ArrowSink {
        ArrowSink {
            temporal_text,
            sizes: HashMap::new(),
            max_rows,
            buffers: Vec::new(),
            index: HashMap::new(),
            total: 0,
            ready: Vec::new(),
        }
    }

    fn buffer(&mut self, layout: &Rc<Layout>) -> usize {
        if let Some(&i) = self.index.get(&Rc::as_ptr(layout)) {
            return i;
        }
        // layouts of the same table and columns share a buffer (a TABLE_MAP repeats in every transaction)
        let same = self.buffers.iter().position(|b| {
            let l = &b.layout;
            l.db == layout.db
                && l.table == layout.table
                && l.primary_key == layout.primary_key
                && l.columns.len() == layout.columns.len()
                && l.columns.iter().zip(&layout.columns).all(|(a, c)| {
                    a.name == c.name
                        && a.type_code == c.type_code
                        && a.real_type == c.real_type
                        && a.meta == c.meta
                        && a.unsigned == c.unsigned
                        && a.collation == c.collation
                })
        });
        let i = match same {
            Some(i) => i,
            None => {
                let cap = self
                    .sizes
                    .get(&(layout.db.clone(), layout.table.clone()))
                    .copied()
                    .unwrap_or(0)
                    .min(self.max_rows);
                self.buffers
                    .push(Buffer::new(layout.clone(), self.temporal_text, cap));
                self.buffers.len() - 1
            }
        };
        self.index.insert(Rc::as_ptr(layout), i);
        i
    }

    /// Every buffered table's rows as batches, in the order the tables first appeared since the last flush.
    pub fn flush(&mut self) {
        for mut b in self.buffers.drain(..) {
            if b.rows > 0 {
                if self.sizes.len() >= 4096 {
                    self.sizes.clear();
                }
                self.sizes
                    .insert((b.layout.db.clone(), b.layout.table.clone()), b.rows);
                let node = b.finish();
                self.ready.push(Ready {
                    layout: b.layout.clone(),
                    node,
                });
            }
        }
        self.index.clear();
        self.total = 0;
    }

    /// Add one image (``cells``: ``d.cells[range]``); on a bad value, the index of its cell in ``d.cells``.
    fn image(
        buf: &mut Buffer,
        which: usize,
        layout: &Layout,
        range: Option<(usize, usize)>,
        d: &crate::rows::Decoded,
    ) -> Result<(), (usize, Option<String>)> {
        let (st, present) = if which == 0 {
            (&mut buf.before, &mut buf.before_present)
        } else {
            (&mut buf.after, &mut buf.after_present)
        };
        let Some((first, last)) = range else {
            st.valid.push(false);
            st.children.iter_mut().for_each(|c| c.null());
            present.null();
            return Ok(());
        };
        st.valid.push(true);
        let cells = &d.cells[first..last];
        let mut next = 0;
        for (i, col) in st.children.iter_mut().enumerate() {
            match cells.get(next) {
                Some(c) if c.col as usize == i => {
                    put(col, buf.kinds[i], c, layout, d).map_err(|e| (first + next, e))?;
                    next += 1;
                }
                _ => col.null(),
            }
        }
        match present_bitmap(layout, cells) {
            Some(bits) => present.bytes(&bits),
            None => present.null(),
        }
        Ok(())
    }
}

impl Sink for ArrowSink {
    fn rows(&mut self, py: Python<'_>, p: &Processor, r: &RowsEvent) -> Result<(), Fail> {
        append(self, py, p, r)
    }
    fn group_end(
        &mut self,
        _py: Python<'_>,
        _p: &Processor,
        g: &crate::engine::GroupEnd,
    ) -> Result<(), Fail> {
        let (commit_us, trx_pos) = (g.commit_us, g.start);
        for b in &mut self.buffers {
            if let Some(from) = b.pending_from.take() {
                for i in from..b.rows {
                    b.commit_ts.valid.set(i);
                    b.trx_pos.valid.set(i);
                    if let Data::I64(v) = &mut b.commit_ts.data {
                        v[i] = commit_us;
                    }
                    if let Data::I64(v) = &mut b.trx_pos.data {
                        v[i] = trx_pos as i64;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Append the rows of one event to its table's buffer.
fn append(sink: &mut ArrowSink, py: Python<'_>, p: &Processor, r: &RowsEvent) -> Result<(), Fail> {
    let bi = sink.buffer(r.layout);
    let d = r.d;
    let op = op_of(r.ev.header.type_code);
    let at = r.ev.at() as i64;
    for (i, row) in d.rows.iter().enumerate() {
        let items = if row.partial.is_some() {
            Some(diff_items(py, p, r, i))
        } else {
            None
        };
        let b = &mut sink.buffers[bi];
        let res = ArrowSink::image(b, 0, r.layout, row.before, d)
            .and_then(|_| ArrowSink::image(b, 1, r.layout, row.after, d));
        if let Err((k, e)) = res {
            let cell = &d.cells[k];
            let col = cell.col as usize;
            return Err(match e {
                None => value_error(py, p, r, i, cell),
                Some(found) => silver_error(py, p, r, i, col, b.kinds[col], found),
            });
        }
        let items = match items {
            Some(Ok(items)) => Some(items),
            Some(Err(f)) => return Err(f),
            None => None,
        };
        b.pos.int(at);
        b.row.int(r.first_row as i64 + i as i64);
        b.op.bytes(op);
        b.gtid.opt_str(r.gtid.map(|g| g.as_bytes()));
        b.trx_pos.null();
        b.commit_ts.null();
        b.event_type.int(r.ev.header.type_code as i64);
        match items {
            None => {
                b.diffs_valid.push(false);
                b.diffs_offsets.push(*b.diffs_offsets.last().unwrap());
            }
            Some(items) => {
                b.diffs_valid.push(true);
                let mut n = 0;
                for (col, list) in &items {
                    let name = field_name(&r.layout.columns[*col as usize].name, *col as usize);
                    for (op, path, value) in list {
                        b.diffs.valid.push(true);
                        b.diffs.children[0].bytes(name.as_bytes());
                        b.diffs.children[1].bytes(op.as_bytes());
                        b.diffs.children[2].bytes(path.as_bytes());
                        b.diffs.children[3].opt_str(value.as_deref().map(|v| v.as_bytes()));
                        n += 1;
                    }
                }
                let last = *b.diffs_offsets.last().unwrap();
                b.diffs_offsets.push(last + n);
            }
        }
        if r.grouped && b.pending_from.is_none() {
            b.pending_from = Some(b.rows);
        }
        b.rows += 1;
        sink.total += 1;
    }
    Ok(())
}

fn silver_error(
    py: Python<'_>,
    p: &Processor,
    r: &RowsEvent,
    i: usize,
    col: usize,
    kind: Silver,
    found: String,
) -> Fail {
    let c = &r.layout.columns[col];
    match p.delegate.call_method1(
        py,
        "silver_error",
        (
            kind.format(),
            found,
            PyBytes::new(py, &c.name),
            r.first_row as usize + i,
            PyBytes::new(py, &r.layout.db),
            PyBytes::new(py, &r.layout.table),
            r.ev.at(),
            r.ev.header.type_code,
        ),
    ) {
        Ok(e) => Fail::Py(PyErr::from_value(e.into_bound(py))),
        Err(e) => Fail::Py(e),
    }
}

/// The Python description of a ready batch: (db, table, columns, primary key, field names, capsules).
pub fn ready_tuple<'py>(py: Python<'py>, r: Ready) -> PyResult<Bound<'py, PyTuple>> {
    let l = &r.layout;
    let columns = PyList::empty(py);
    for c in &l.columns {
        columns.append((
            PyBytes::new(py, &c.name),
            c.type_code,
            c.real_type,
            c.meta,
            c.unsigned,
            c.collation,
        ))?;
    }
    let pk: Option<Vec<u32>> = l.primary_key.clone();
    let caps = capsules(py, r.node)?;
    PyTuple::new(
        py,
        [
            PyBytes::new(py, &l.db).into_any(),
            PyBytes::new(py, &l.table).into_any(),
            columns.into_any(),
            pk.into_pyobject(py)?.into_any(),
            caps.into_any(),
        ],
    )
}
