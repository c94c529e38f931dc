//! Event bodies and the state across events: TABLE_MAPs (``binlake.binlog.decoders.TableMaps``), rows events,
//! GTIDs, statements and transaction boundaries. Decodes natively the events every transaction has (TABLE_MAP,
//! rows, GTID, QUERY, XID, TRANSACTION_PAYLOAD, ANNOTATE_ROWS, ROWS_QUERY, MariaDB GTID); every other event is
//! decoded by the Python decoder (rare: a few per file), which also names the error of any event whose body
//! does not decode here.

use crate::layout::{table_map, Cur, Layout, SchemaColumn, R};
use crate::reader::{Event, Fail, Fde, Reader};
use crate::rows::{decode_rows, is_update, Decoded, TextDecoder};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

const TABLE_MAPS_COLUMNS: usize = 1 << 18;
const TABLE_MAP_CACHE_SIZE: usize = 4096;
const TABLE_MAP_CACHE_COLUMNS: usize = 1 << 17;

/// table_id -> layout, bounded by total columns: a map that would go past the budget first drops the maps set
/// longest ago.
#[derive(Default)]
struct TableMaps {
    map: HashMap<u64, (u64, Rc<Layout>)>,
    order: BTreeMap<u64, u64>,
    seq: u64,
    columns: usize,
}

impl TableMaps {
    fn pop(&mut self, id: u64) {
        if let Some((seq, l)) = self.map.remove(&id) {
            self.order.remove(&seq);
            self.columns -= l.columns.len();
        }
    }
    fn set(&mut self, id: u64, layout: Rc<Layout>) {
        self.pop(id);
        let cols = layout.columns.len();
        while !self.map.is_empty() && self.columns + cols > TABLE_MAPS_COLUMNS {
            let (_, &oldest) = self.order.iter().next().unwrap();
            self.pop(oldest);
        }
        self.seq += 1;
        self.order.insert(self.seq, id);
        self.map.insert(id, (self.seq, layout));
        self.columns += cols;
    }
    fn clear(&mut self) {
        *self = TableMaps::default();
    }
    fn get(&self, id: u64) -> Option<&Rc<Layout>> {
        self.map.get(&id).map(|(_, l)| l)
    }
}

/// What a statement does to a transaction (``iter_transactions`` and ``_row_changes`` look at its start).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Stmt {
    Begin,
    Commit,
    XaCommit,
    Rollback,
    RollbackTo,
    XaRollback,
    Other,
}

fn stmt_kind(s: &str) -> Stmt {
    match s {
        "begin" => Stmt::Begin,
        "commit" => Stmt::Commit,
        "xa_commit" => Stmt::XaCommit,
        "rollback" => Stmt::Rollback,
        "rollback_to" => Stmt::RollbackTo,
        "xa_rollback" => Stmt::XaRollback,
        _ => Stmt::Other,
    }
}

/// ``_statement(query)``: the query's start without `` \t\r\n(``, upper-cased; None when a non-ASCII
/// character is near the start (Python's ``str.upper`` decides there).
fn classify(query: &[u8]) -> Option<Stmt> {
    let start = query
        .iter()
        .position(|b| !b" \t\r\n(".contains(b))
        .unwrap_or(query.len());
    let head: Vec<u8> = query[start..query.len().min(start + 12)].to_vec();
    if head.iter().any(|&b| b >= 0x80) {
        return None;
    }
    let up = head.to_ascii_uppercase();
    let p = |s: &[u8]| up.starts_with(s);
    Some(if p(b"BEGIN") || p(b"XA START") {
        Stmt::Begin
    } else if p(b"COMMIT") {
        Stmt::Commit
    } else if p(b"XA COMMIT") {
        Stmt::XaCommit
    } else if p(b"ROLLBACK TO") {
        Stmt::RollbackTo
    } else if p(b"ROLLBACK") {
        Stmt::Rollback
    } else if p(b"XA ROLLBACK") {
        Stmt::XaRollback
    } else {
        Stmt::Other
    })
}

/// What an event means to the state machines.
enum Summary {
    Gtid { commit_ts: u64, began: bool },
    Query(Stmt),
    Xid,
    XaPrepare,
    Encryption(u8, u32),
    Rows,
    Other,
}

pub struct Group {
    pub start: u64,
    pub last_ts: u32,
    pub gtid_ts: u64,
    /// the GTID that opened the group (``Transaction.gtid``)
    pub gtid: Option<String>,
    /// just past the group's last event in the file (``Transaction.end_pos``: inner events count as their payload)
    pub end: u64,
}

impl Group {
    fn new(ev: &Event) -> Group {
        let end = if ev.payload_pos.is_none() {
            ev.pos + ev.header.size as u64
        } else {
            ev.at()
        };
        Group {
            start: ev.at(),
            last_ts: ev.header.timestamp,
            gtid_ts: 0,
            gtid: None,
            end,
        }
    }
    fn add(&mut self, ev: &Event) {
        self.last_ts = ev.header.timestamp;
        if ev.payload_pos.is_none() {
            self.end = ev.pos + ev.header.size as u64;
        }
    }
}

/// How a group ended (``Transaction.kind``).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum TrxKind {
    Commit,
    Rollback,
    Ddl,
    XaPrepare,
    Open,
}

impl TrxKind {
    pub fn name(self) -> &'static str {
        match self {
            TrxKind::Commit => "commit",
            TrxKind::Rollback => "rollback",
            TrxKind::Ddl => "ddl",
            TrxKind::XaPrepare => "xa_prepare",
            TrxKind::Open => "open",
        }
    }
}

/// A transaction that ended: its kind, commit time (the GTID's immediate_commit_timestamp, else the last
/// event's header time), first event, end, GTID, and for a DDL the statement's event.
pub struct GroupEnd<'e> {
    pub kind: TrxKind,
    pub commit_us: i64,
    pub start: u64,
    pub end: u64,
    pub gtid: Option<&'e str>,
    pub statement: Option<&'e Event>,
}

/// Where a sink gets the rows of one event.
pub struct RowsEvent<'e, 'a> {
    pub ev: &'e Event,
    pub layout: &'e Rc<Layout>,
    pub d: &'e Decoded<'a>,
    pub first_row: u32,
    pub gtid: Option<&'e str>,
    pub diffs: &'e [PyObject],
    pub grouped: bool,
}

pub trait Sink {
    fn rows(&mut self, py: Python<'_>, p: &Processor, r: &RowsEvent) -> Result<(), Fail>;
    /// the transaction holding the rows given since the last call ended (``iter_transactions``)
    fn group_end(&mut self, _py: Python<'_>, _p: &Processor, _g: &GroupEnd) -> Result<(), Fail> {
        Ok(())
    }
}

pub struct Processor {
    pub reader: Reader,
    pub delegate: PyObject,
    tables: TableMaps,
    cache: HashMap<(Vec<u8>, u8, bool), Rc<Layout>>,
    cache_columns: usize,
    registered: Vec<bool>,
    pub unknown: BTreeMap<u8, u64>,
    pub assumptions: Vec<(Vec<u8>, Vec<u8>, Vec<String>)>,
    gtid: Option<String>,
    last_pos: Option<u64>,
    next_row: u32,
    pub group: Option<Group>,
    began: bool,
    /// a schema provider fills TABLE_MAPs without metadata (the Python decoder's ``schema_provider``)
    has_schema: bool,
    /// events read, inner events of payloads included (``ReadStats.events``)
    pub events: u64,
}

struct PyText<'py>(Python<'py>, &'py PyObject);

impl TextDecoder for PyText<'_> {
    fn decode(&mut self, raw: &[u8], codec: &'static str) -> String {
        self.1
            .call_method1(self.0, "decode_text", (PyBytes::new(self.0, raw), codec))
            .and_then(|s| s.extract::<String>(self.0))
            .unwrap_or_default()
    }
}

/// ``binlog_get_uncompress_len`` + ``binlog_buf_uncompress`` (MariaDB compressed events): header byte
/// 0x80|alg<<4|lenlen (alg 0, zlib), a 1-4 byte big-endian length, one whole zlib stream of exactly that length
/// (as the Python decoder's ``_mariadb_uncompress``).
fn mariadb_uncompress(data: &[u8]) -> R<Vec<u8>> {
    use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
    use miniz_oxide::inflate::TINFLStatus;
    let h = *data.first().ok_or(())?;
    let lenlen = (h & 7) as usize;
    if h & 0xF0 != 0x80 || !(1..=4).contains(&lenlen) || data.len() < 1 + lenlen {
        return Err(());
    }
    let size = data[1..1 + lenlen]
        .iter()
        .fold(0usize, |v, &b| v << 8 | b as usize);
    // deflate expands at most 1032:1: a larger stated size can not be reached (an error, nothing allocated)
    if size > (data.len() - 1 - lenlen) * 1032 + 64 {
        return Err(());
    }
    let mut out = vec![0u8; size + 1];
    let mut state = DecompressorOxide::new();
    let flags = inflate_flags::TINFL_FLAG_PARSE_ZLIB_HEADER
        | inflate_flags::TINFL_FLAG_HAS_MORE_INPUT
        | inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF
        | inflate_flags::TINFL_FLAG_COMPUTE_ADLER32;
    let (status, _, produced) = decompress(&mut state, &data[1 + lenlen..], &mut out, 0, flags);
    // ``uncompress()`` wants the whole stream (its Adler-32 checked) and exactly the stated length
    if status != TINFLStatus::Done || produced != size {
        return Err(());
    }
    out.truncate(size);
    Ok(out)
}

fn uuid(sid: &[u8]) -> String {
    let h: String = sid.iter().map(|b| format!("{:02x}", b)).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

impl Processor {
    pub fn new(
        reader: Reader,
        delegate: PyObject,
        registered: Vec<bool>,
        has_schema: bool,
    ) -> Processor {
        Processor {
            reader,
            delegate,
            tables: TableMaps::default(),
            cache: HashMap::new(),
            cache_columns: 0,
            registered,
            unknown: BTreeMap::new(),
            assumptions: Vec::new(),
            gtid: None,
            last_pos: None,
            next_row: 0,
            group: None,
            began: false,
            has_schema,
            events: 0,
        }
    }

    fn post_len(&self, t: u8, default: u8) -> u8 {
        self.reader
            .fde
            .as_ref()
            .map_or(default, |f| f.post_header_len(t, default))
    }

    /// Turn a ``Fail::Event`` into the Python decoder's error for that event.
    pub fn resolve(&self, py: Python<'_>, f: Fail) -> Fail {
        let Fail::Event(e) = f else { return f };
        let tm = e
            .table_map
            .as_ref()
            .map(|(raw, end)| (PyBytes::new(py, raw), *end));
        match self.delegate.call_method1(py, "event", (PyBytes::new(py, &e.raw), e.body_end, e.pos, e.payload_pos, tm)) {
            Err(err) => Fail::Py(err),
            Ok(_) => Fail::Py(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "binlake's native decoder rejected the event at offset {}{} that the Python decoder reads; \
                 read this file with engine='python' and report it",
                e.payload_pos.unwrap_or(e.pos),
                e.payload_pos.map(|_| format!(" (inner offset {})", e.pos)).unwrap_or_default()))),
        }
    }

    /// Read and handle the next event; false at the end of the input.
    pub fn step(&mut self, py: Python<'_>, sink: &mut dyn Sink) -> Result<bool, Fail> {
        let delegate = self.delegate.clone_ref(py);
        let mut on_fde = |ev: &Event| -> Result<Fde, Fail> {
            let t = delegate.call_method1(py, "fde", (PyBytes::new(py, &ev.raw), ev.pos))?;
            let (crc, phl, mariadb): (bool, Vec<u8>, bool) = t.extract(py)?;
            Ok(Fde {
                checksum_crc32: crc,
                post_header_lengths: phl,
                mariadb,
            })
        };
        let ev = match self.reader.next(&mut on_fde) {
            Ok(Some(ev)) => ev,
            Ok(None) => {
                self.end_group(py, sink, TrxKind::Open, None)?;
                return Ok(false);
            }
            Err(f) => return Err(f),
        };
        let summary = match self.event(py, &ev, sink) {
            Ok(s) => s,
            Err(f) => return Err(self.resolve(py, f)),
        };
        self.events += 1;
        self.transactions(py, &ev, &summary, sink)?;
        if ev.payload_pos.is_none() {
            let enc = match summary {
                Summary::Encryption(a, b) => Some((a, b)),
                _ => None,
            };
            self.reader.after_event(&ev, enc)?;
        }
        Ok(true)
    }

    fn end_group(
        &mut self,
        py: Python<'_>,
        sink: &mut dyn Sink,
        kind: TrxKind,
        statement: Option<&Event>,
    ) -> Result<(), Fail> {
        self.began = false;
        let Some(g) = self.group.take() else {
            return Ok(());
        };
        let commit_us = if g.gtid_ts != 0 {
            g.gtid_ts as i64
        } else {
            g.last_ts as i64 * 1_000_000
        };
        let end = GroupEnd {
            kind,
            commit_us,
            start: g.start,
            end: g.end,
            gtid: g.gtid.as_deref(),
            statement,
        };
        sink.group_end(py, self, &end)
    }

    /// Add a statement or XID to the open group, or open one with it.
    fn join(&mut self, ev: &Event) {
        match self.group.as_mut() {
            Some(g) => g.add(ev),
            None => self.group = Some(Group::new(ev)),
        }
    }

    /// ``iter_transactions``: GTID or BEGIN opens a group; XID, COMMIT, ROLLBACK or XA_PREPARE closes it; any
    /// other statement outside BEGIN is a group alone; events outside groups belong to none.
    fn transactions(
        &mut self,
        py: Python<'_>,
        ev: &Event,
        s: &Summary,
        sink: &mut dyn Sink,
    ) -> Result<(), Fail> {
        match s {
            Summary::Gtid {
                commit_ts, began, ..
            } => {
                self.end_group(py, sink, TrxKind::Open, None)?;
                let mut g = Group::new(ev);
                g.gtid_ts = *commit_ts;
                g.gtid = self.gtid.clone();
                self.group = Some(g);
                self.began = *began;
            }
            Summary::Query(stmt) => {
                self.join(ev);
                match stmt {
                    Stmt::Begin => self.began = true,
                    Stmt::Commit | Stmt::XaCommit => {
                        self.end_group(py, sink, TrxKind::Commit, None)?
                    }
                    Stmt::Rollback | Stmt::XaRollback => {
                        self.end_group(py, sink, TrxKind::Rollback, None)?
                    }
                    _ if !self.began => self.end_group(py, sink, TrxKind::Ddl, Some(ev))?,
                    _ => {}
                }
            }
            Summary::Xid | Summary::XaPrepare => {
                self.join(ev);
                let kind = if matches!(s, Summary::Xid) {
                    TrxKind::Commit
                } else {
                    TrxKind::XaPrepare
                };
                self.end_group(py, sink, kind, None)?;
            }
            _ => {
                if let Some(g) = self.group.as_mut() {
                    g.add(ev);
                }
            }
        }
        Ok(())
    }

    /// Decode one event body and pass its rows to the sink.
    fn event(&mut self, py: Python<'_>, ev: &Event, sink: &mut dyn Sink) -> Result<Summary, Fail> {
        let t = ev.header.type_code;
        if !self.registered[t as usize] {
            *self.unknown.entry(t).or_default() += 1;
            return Ok(Summary::Other);
        }
        let (buf, pos, end) = (&ev.raw[..], crate::reader::HEADER_LEN, ev.body_end);
        let bad = |_| ev.to_ref(None);
        match t {
            15 => {
                self.tables.clear();
                Ok(Summary::Other)
            }
            19 => {
                self.table_map(py, ev)?;
                Ok(Summary::Other)
            }
            20..=25 | 30..=32 | 39 | 166..=171 => {
                self.rows(py, ev, sink)?;
                Ok(Summary::Rows)
            }
            33 | 34 => {
                let mut c = Cur::new(buf, pos, end);
                let (gtid, ts) = gtid_event(&mut c).map_err(bad)?;
                self.gtid = if t == 33 { Some(gtid) } else { None };
                Ok(Summary::Gtid {
                    commit_ts: ts,
                    began: false,
                })
            }
            162 => {
                let mut c = Cur::new(buf, pos, end);
                let (seq, domain, flags) = mariadb_gtid(&mut c).map_err(bad)?;
                self.gtid = Some(format!("{}-{}-{}", domain, ev.header.server_id, seq));
                Ok(Summary::Gtid {
                    commit_ts: 0,
                    began: flags & 1 == 0,
                })
            }
            2 | 165 => {
                let post = self.post_len(2, 13);
                let mut c = Cur::new(buf, pos, end);
                let query = query_event(&mut c, post, t == 165).map_err(bad)?;
                let stmt = match classify(&query) {
                    Some(s) => s,
                    None => stmt_kind(
                        &self
                            .delegate
                            .call_method1(py, "statement", (PyBytes::new(py, &query),))?
                            .extract::<String>(py)?,
                    ),
                };
                if matches!(stmt, Stmt::Commit | Stmt::Rollback | Stmt::RollbackTo) {
                    self.gtid = None;
                }
                Ok(Summary::Query(stmt))
            }
            16 => {
                Cur::new(buf, pos, end).u64().map_err(bad)?;
                self.gtid = None;
                Ok(Summary::Xid)
            }
            40 => {
                let mut c = Cur::new(buf, pos, end);
                let (comp, payload, usize_) = payload_event(&mut c).map_err(bad)?;
                self.reader
                    .open_payload(comp, payload.to_vec(), usize_, ev.pos);
                Ok(Summary::Other)
            }
            160 => Ok(Summary::Other),
            29 => {
                Cur::new(buf, pos, end).u8().map_err(bad)?;
                Ok(Summary::Other)
            }
            _ => self.delegated(py, ev),
        }
    }

    /// An event the Python decoder decodes: its summary, or its error.
    fn delegated(&mut self, py: Python<'_>, ev: &Event) -> Result<Summary, Fail> {
        let r = self.delegate.call_method1(
            py,
            "event",
            (
                PyBytes::new(py, &ev.raw),
                ev.body_end,
                ev.pos,
                ev.payload_pos,
                None::<(Vec<u8>, usize)>,
            ),
        )?;
        let t = r.bind(py).downcast::<PyTuple>().map_err(PyErr::from)?;
        let kind: String = t.get_item(0)?.extract()?;
        Ok(match kind.as_str() {
            "gtid" => {
                self.gtid = t.get_item(1)?.extract()?;
                Summary::Gtid {
                    commit_ts: t.get_item(2)?.extract()?,
                    began: t.get_item(3)?.extract()?,
                }
            }
            "query" => {
                let stmt = stmt_kind(&t.get_item(1)?.extract::<String>()?);
                if matches!(stmt, Stmt::Commit | Stmt::Rollback | Stmt::RollbackTo) {
                    self.gtid = None;
                }
                Summary::Query(stmt)
            }
            "xid" => {
                self.gtid = None;
                Summary::Xid
            }
            "xa_prepare" => Summary::XaPrepare,
            "encryption" => {
                Summary::Encryption(t.get_item(1)?.extract()?, t.get_item(2)?.extract()?)
            }
            _ => Summary::Other,
        })
    }

    fn table_map(&mut self, py: Python<'_>, ev: &Event) -> Result<(), Fail> {
        let post = self.post_len(19, 8);
        let mariadb = self.reader.fde.as_ref().is_some_and(|f| f.mariadb);
        let key = (
            ev.raw[crate::reader::HEADER_LEN..ev.body_end].to_vec(),
            post,
            mariadb,
        );
        let layout = match self.cache.get(&key) {
            Some(l) => l.clone(),
            None => {
                let (delegate, has_schema) = (&self.delegate, self.has_schema);
                let mut schema =
                    |db: &[u8], table: &[u8], types: &[u8]| -> R<Option<Vec<SchemaColumn>>> {
                        if !has_schema {
                            return Ok(None);
                        }
                        type Col = (
                            Vec<u8>,
                            bool,
                            Option<u64>,
                            Option<Vec<Vec<u8>>>,
                            Option<Vec<Vec<u8>>>,
                            Option<u8>,
                        );
                        let got = delegate
                            .call_method1(
                                py,
                                "schema",
                                (
                                    PyBytes::new(py, db),
                                    PyBytes::new(py, table),
                                    PyBytes::new(py, types),
                                ),
                            )
                            .map_err(|_| ())?;
                        let cols: Option<Vec<Col>> = got.extract(py).map_err(|_| ())?;
                        Ok(cols.map(|cols| {
                            cols.into_iter()
                                .map(
                                    |(name, unsigned, collation, enum_values, set_values, fsp)| {
                                        SchemaColumn {
                                            name,
                                            unsigned,
                                            collation,
                                            enum_values,
                                            set_values,
                                            fsp,
                                        }
                                    },
                                )
                                .collect()
                        }))
                    };
                let mut l = table_map(
                    &ev.raw,
                    crate::reader::HEADER_LEN,
                    ev.body_end,
                    post,
                    mariadb,
                    &mut schema,
                )
                .map_err(|_| ev.to_ref(None))?;
                l.raw = ev.raw.clone();
                l.body_end = ev.body_end;
                let l = Rc::new(l);
                let cols = l.columns.len();
                if cols <= TABLE_MAP_CACHE_COLUMNS {
                    if self.cache.len() >= TABLE_MAP_CACHE_SIZE
                        || self.cache_columns + cols > TABLE_MAP_CACHE_COLUMNS
                    {
                        self.cache.clear();
                        self.cache_columns = 0;
                    }
                    self.cache.insert(key, l.clone());
                    self.cache_columns += cols;
                }
                l
            }
        };
        if !layout.assumptions.is_empty() {
            let k = (layout.db.clone(), layout.table.clone());
            match self
                .assumptions
                .iter_mut()
                .find(|(d, t, _)| (d, t) == (&k.0, &k.1))
            {
                Some(slot) => slot.2 = layout.assumptions.clone(),
                None => self
                    .assumptions
                    .push((k.0, k.1, layout.assumptions.clone())),
            }
        }
        self.tables.set(layout.table_id, layout);
        Ok(())
    }

    fn rows(&mut self, py: Python<'_>, ev: &Event, sink: &mut dyn Sink) -> Result<(), Fail> {
        let t = ev.header.type_code;
        let v2 = matches!(t, 30..=32 | 39 | 169..=171);
        let post = self.post_len(t, if v2 { 10 } else { 8 });
        let id_size = if post == 6 { 4 } else { 6 };
        let bad = |_| ev.to_ref(None);
        let mut c = Cur::new(&ev.raw, crate::reader::HEADER_LEN, ev.body_end);
        let table_id = c.uint(id_size).map_err(bad)?;
        c.u16().map_err(bad)?;
        if v2 {
            let extra = c.u16().map_err(bad)?;
            if extra < 2 {
                return Err(ev.to_ref(None));
            }
            c.skip(extra as u64 - 2).map_err(bad)?;
        }
        let ncols = c.packed().map_err(bad)?;
        let nbytes = ((ncols as u128 + 7) >> 3).min(u64::MAX as u128) as u64;
        let present = c.bytes(nbytes).map_err(bad)?;
        let present_after = if is_update(t) {
            c.bytes(nbytes).map_err(bad)?
        } else {
            &[][..]
        };
        // ``row_log_event_uncompress``: only the rows (``m_rows_buf``) after the plain bitmaps are compressed
        let owned;
        let (buf, start, end): (&[u8], usize, usize) = if (166..=171).contains(&t) {
            owned = mariadb_uncompress(c.rest()).map_err(bad)?;
            (&owned, 0, owned.len())
        } else {
            (&ev.raw[..ev.body_end], c.pos, ev.body_end)
        };
        let c = Cur::new(buf, start, end);
        if c.remaining() == 0 {
            return Ok(());
        }
        let Some(layout) = self.tables.get(table_id).cloned() else {
            return Err(ev.to_ref(None));
        };
        let tm = || Some((layout.raw.clone(), layout.body_end));
        if layout.columns.len() as u64 != ncols {
            return Err(ev.to_ref(tm()));
        }
        let mut td = PyText(py, &self.delegate);
        let d = decode_rows(&layout, t, buf, c.pos, present, present_after, &mut td)
            .map_err(|_| ev.to_ref(tm()))?;
        // partial JSON diff vectors are parsed by the Python decoder (binlake.mysqljson.read_diffs)
        let mut diffs = Vec::with_capacity(d.diffs.len());
        for raw in &d.diffs {
            match self
                .delegate
                .call_method1(py, "diffs", (PyBytes::new(py, raw),))
            {
                Ok(v) => diffs.push(v),
                Err(_) => return Err(ev.to_ref(tm())),
            }
        }
        if d.rows.is_empty() {
            return Ok(());
        }
        let at = ev.at();
        if self.last_pos != Some(at) {
            self.last_pos = Some(at);
            self.next_row = 0;
        }
        let r = RowsEvent {
            ev,
            layout: &layout,
            d: &d,
            first_row: self.next_row,
            gtid: self.gtid.as_deref(),
            diffs: &diffs,
            grouped: self.group.is_some(),
        };
        sink.rows(py, self, &r)?;
        self.next_row += d.rows.len() as u32;
        Ok(())
    }
}

/// ``Gtid_event``: (``uuid:gno``, immediate_commit_timestamp or 0).
fn gtid_event(c: &mut Cur) -> R<(String, u64)> {
    c.u8()?;
    let sid = c.bytes(16)?;
    let gno = c.u64()? as i64;
    let mut ts = 0;
    if c.remaining() >= 1 {
        let lt_type = c.u8()?;
        if lt_type == 2 && c.remaining() >= 16 {
            c.u64()?;
            c.u64()?;
            if c.remaining() >= 7 {
                ts = c.uint(7)?;
                if ts & (1 << 55) != 0 {
                    ts &= !(1 << 55);
                    c.uint(7)?;
                }
                if c.remaining() >= 1 {
                    c.packed()?;
                }
                if c.remaining() >= 4 {
                    let v = c.u32()?;
                    if v & (1 << 31) != 0 {
                        c.u32()?;
                    }
                    if c.remaining() >= 8 {
                        c.u64()?;
                    }
                }
            }
        }
    }
    Ok((format!("{}:{}", uuid(sid), gno), ts))
}

/// MariaDB ``Gtid_log_event``: (seq_no, domain_id, flags2).
fn mariadb_gtid(c: &mut Cur) -> R<(u64, u32, u8)> {
    let seq = c.u64()?;
    let domain = c.u32()?;
    let flags = c.u8()?;
    if flags & 2 != 0 {
        c.u64()?;
    } else if flags & (64 | 128) != 0 {
        c.u32()?;
        let g = c.u8()? as u64;
        let b = c.u8()? as u64;
        c.bytes(g)?;
        c.bytes(b)?;
    } else {
        c.skip(6)?;
    }
    Ok((seq, domain, flags))
}

/// ``Query_event``: the statement text (uncompressed for MariaDB's QUERY_COMPRESSED_EVENT).
fn query_event(c: &mut Cur, post: u8, compressed: bool) -> R<Vec<u8>> {
    let start = c.pos;
    c.u32()?;
    c.u32()?;
    let db_len = c.u8()? as u64;
    c.u16()?;
    let status_len = if post >= 13 { c.u16()? as u64 } else { 0 };
    let used = c.pos - start;
    if post as usize > used {
        c.skip((post as usize - used) as u64)?;
    }
    c.bytes(status_len)?;
    c.bytes(db_len)?;
    c.skip(1)?;
    let q = c.rest();
    if compressed {
        mariadb_uncompress(q)
    } else {
        Ok(q.to_vec())
    }
}

/// ``Transaction_payload_event``: (compression type, payload, uncompressed size).
fn payload_event<'a>(c: &mut Cur<'a>) -> R<(u64, &'a [u8], u64)> {
    let (mut comp, mut size, mut usize_) = (255u64, None, 0u64);
    loop {
        let ftype = c.packed()?;
        if ftype == 0 {
            break;
        }
        let length = c.packed()?;
        let value_start = c.pos;
        let value = c.packed()?;
        c.pos = value_start;
        c.skip(length)?;
        match ftype {
            1 => size = Some(value),
            2 => comp = value,
            3 => usize_ = value,
            _ => {}
        }
    }
    let payload = c.rest();
    if size.is_some_and(|s| s != payload.len() as u64) {
        return Err(());
    }
    Ok((comp, payload, usize_))
}
