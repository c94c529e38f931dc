//! ``bronze.binlog_events`` rows of one chunk, written natively: what ``binlake.pipeline.bronze``'s
//! ``BronzeApplier`` writes for the chunk's transactions (WL#6827 reader | filter | applier), byte for byte, as
//! Arrow batches in ``BRONZE_SCHEMA``'s column order. Images, partial JSON diffs and row keys are compact JSON
//! (``binlake.pipeline.fold.compact_json``, ``row_key``).
//!
//! A transaction's rows wait until it ends; then the Python side says whether it is kept (``TransactionFilter``,
//! which counts), so a rolled back, incomplete, already applied or failing transaction leaves nothing. An error
//! rendering its rows (a name that is not UTF-8, a value with no JSON form) waits with them: it ends the chunk if
//! the transaction is kept, or if the reader fails later inside it (the first error in file order wins, as in
//! the Python writer, which renders only kept transactions). Python
//! also gives, once per table layout, whether its table is kept and its bronze layout (``layout_id``, columns,
//! primary key, from the Python decoder's TABLE_MAP), and a DDL's statement; it writes the chunk's error and end
//! rows (``binlake.lake.bronze_native``).

use crate::arrow::{struct_node, Col, Node};
use crate::engine::{GroupEnd, Processor, RowsEvent, Sink, TrxKind};
use crate::fmt::{json_str, typed_date, typed_datetime};
use crate::jsonl::{diff_items, members, op_of, value_error};
use crate::layout::{
    Kind, Layout, T_DATE, T_DATETIME, T_DATETIME2, T_NEWDATE, T_TIMESTAMP, T_TIMESTAMP2,
};
use crate::reader::{Event, Fail};
use crate::rows::{Cell, Val};
use crate::values::json_value;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// ``binlake.pipeline.identity``: ``_binlake_seq = file_seq << 44 | pos << 12 | min(row, 4095)``.
const ROW_BITS: u32 = 12;
const FILE_SHIFT: u32 = 44;
/// Column bytes of a batch: it is handed on before its 32-bit offsets could overflow.
const BATCH_BYTES: usize = 1 << 30;
/// Layouts remembered (a long file names new table ids after every DDL or FLUSH TABLES).
const MAX_INFOS: usize = 4096;

/// The ops of bronze rows this writer makes, in ``BRONZE_SCHEMA``'s words.
const OPS: [&str; 5] = ["insert", "update", "delete", "layout", "ddl"];

/// A table layout as bronze states it (``BronzeApplier._layout_meta``) and whether the table filter keeps it.
struct Info {
    keep: bool,
    id: String,
    columns: String,
    primary_key: Option<String>,
    /// the primary key's column indexes (None: the table has none)
    pk: Option<Vec<u32>>,
    db: String,
    table: String,
    /// each column's ``"name":`` in compact JSON
    keys: Vec<Vec<u8>>,
}

type Span = Option<(usize, usize)>;

/// One bronze row of the open transaction.
struct Pending {
    op: usize,
    pos: u64,
    row: u32,
    event_type: u8,
    info: Option<Rc<Info>>,
    before: Span,
    after: Span,
    diffs: Span,
    key_before: Span,
    key_after: Span,
    /// a DDL's (db, statement)
    ddl: Option<(Option<String>, String)>,
}

pub struct BronzeSink {
    source: String,
    file: String,
    file_seq: i64,
    size: i64,
    sha256: String,
    run: String,
    /// the chunk ends before the first transaction starting here (``ChunkTask.end``)
    end: Option<u64>,
    infos: HashMap<*const Layout, (Rc<Layout>, Rc<Info>)>,
    /// layout ids with a layout row in this chunk (kept transactions only)
    stated: HashSet<String>,
    // the open transaction
    pending: Vec<Pending>,
    arena: Vec<u8>,
    values: Vec<u8>,
    trx_stated: Vec<String>,
    trx_filtered: u64,
    last_pos: Option<u64>,
    next_row: u32,
    /// the open transaction's first error rendering its rows (the rest of its rows are not rendered)
    pub deferred: Option<Fail>,
    // rows of kept transactions, ready to hand on
    cols: Vec<Col>,
    pub rows: usize,
    bytes: usize,
    /// bronze rows per op, in the order ops first appeared
    pub ops: Vec<(&'static str, u64)>,
    pub transactions: u64,
    pub end_pos: u64,
    pub open_at_end: bool,
    /// the chunk's last transaction has been read
    pub stop: bool,
    /// layout ids with an UPDATE row (no partial JSON) whose after image lacks columns (a MINIMAL image)
    pub minimal: HashSet<String>,
    /// layout ids with an after image holding a DATE/DATETIME/TIMESTAMP value that has no typed value (a zero
    /// or invalid date: ``binlake.binlog.silver_types.invalid_temporal``)
    pub invalid_temporal: HashSet<String>,
}

const COLUMNS: [(&str, &str); 26] = [
    ("source", "u"),
    ("binlog_file", "u"),
    ("file_seq", "i"),
    ("file_size", "l"),
    ("file_sha256", "u"),
    ("pos", "l"),
    ("row", "i"),
    ("_binlake_seq", "l"),
    ("gtid", "u"),
    ("trx_pos", "l"),
    ("commit_ts", "l"),
    ("db", "u"),
    ("table_name", "u"),
    ("op", "u"),
    ("before", "u"),
    ("after", "u"),
    ("diffs", "u"),
    ("columns", "u"),
    ("primary_key", "u"),
    ("key_before", "u"),
    ("key_after", "u"),
    ("event_type", "i"),
    ("statement", "u"),
    ("ingest_run", "u"),
    ("raw", "z"),
    ("layout", "u"),
];

fn new_columns() -> Vec<Col> {
    COLUMNS
        .iter()
        .map(|(n, f)| Col::new(n, f.to_string()))
        .collect()
}

/// A rendered image: (column index, value span in ``values``) per member, in ``dict`` order.
type Members = Vec<(u32, usize, usize)>;

fn find<'m>(layout: &Layout, m: &'m Members, name: &[u8]) -> Option<&'m (u32, usize, usize)> {
    m.iter()
        .find(|(c, _, _)| layout.columns[*c as usize].name == name)
}

impl BronzeSink {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        source: String,
        file: String,
        file_seq: i64,
        size: i64,
        sha256: String,
        run: String,
        end: Option<u64>,
    ) -> BronzeSink {
        BronzeSink {
            source,
            file,
            file_seq,
            size,
            sha256,
            run,
            end,
            infos: HashMap::new(),
            stated: HashSet::new(),
            pending: Vec::new(),
            arena: Vec::new(),
            values: Vec::new(),
            trx_stated: Vec::new(),
            trx_filtered: 0,
            last_pos: None,
            next_row: 0,
            deferred: None,
            cols: new_columns(),
            rows: 0,
            bytes: 0,
            ops: Vec::new(),
            transactions: 0,
            end_pos: 0,
            open_at_end: false,
            stop: false,
            minimal: HashSet::new(),
            invalid_temporal: HashSet::new(),
        }
    }

    pub fn full(&self, batch_rows: usize) -> bool {
        self.rows >= batch_rows || self.bytes >= BATCH_BYTES
    }

    /// The rows ready so far as one struct array (a record batch).
    pub fn take(&mut self) -> Node {
        let children = self.cols.iter_mut().map(|c| c.node()).collect();
        let node = struct_node(children, self.rows);
        self.cols = new_columns();
        self.rows = 0;
        self.bytes = 0;
        node
    }

    /// The bronze layout of ``layout``, asked of the delegate at the first rows event using it (``ev``: where the
    /// delegate locates a name that is not UTF-8).
    fn info(
        &mut self,
        py: Python<'_>,
        p: &Processor,
        layout: &Rc<Layout>,
        ev: &Event,
    ) -> Result<Rc<Info>, Fail> {
        if let Some((_, info)) = self.infos.get(&Rc::as_ptr(layout)) {
            return Ok(info.clone());
        }
        type Got = (
            bool,
            String,
            String,
            Option<String>,
            Option<Vec<u32>>,
            String,
            String,
        );
        let (keep, id, columns, primary_key, pk, db, table): Got = p
            .delegate
            .call_method1(
                py,
                "layout",
                (
                    PyBytes::new(py, &layout.raw),
                    layout.body_end,
                    ev.pos,
                    ev.payload_pos,
                    ev.header.type_code,
                ),
            )?
            .extract(py)?;
        let keys = layout
            .columns
            .iter()
            .map(|c| {
                let mut k = Vec::with_capacity(c.name.len() + 3);
                json_str(&c.name, false, &mut k);
                k.push(b':');
                k
            })
            .collect();
        let info = Rc::new(Info {
            keep,
            id,
            columns,
            primary_key,
            pk,
            db,
            table,
            keys,
        });
        if self.infos.len() >= MAX_INFOS {
            self.infos.clear();
        }
        self.infos
            .insert(Rc::as_ptr(layout), (layout.clone(), info.clone()));
        Ok(info)
    }

    /// Render an image's members into ``values``; a value with no JSON form: its cell.
    fn render<'c, 'a>(
        &mut self,
        layout: &Layout,
        d: &crate::rows::Decoded,
        cells: &[&'c Cell<'a>],
    ) -> Result<Members, &'c Cell<'a>> {
        let mut out = Vec::with_capacity(cells.len());
        for c in cells {
            let start = self.values.len();
            json_value(
                &c.val,
                &layout.columns[c.col as usize],
                d,
                false,
                true,
                &mut self.values,
            )
            .map_err(|_| *c)?;
            out.push((c.col, start, self.values.len()));
        }
        Ok(out)
    }

    /// ``{"name":value,...}`` of rendered members.
    fn push_object(&mut self, info: &Info, m: &[(u32, usize, usize)]) -> Span {
        let start = self.arena.len();
        self.arena.push(b'{');
        for (k, (c, a, b)) in m.iter().enumerate() {
            if k > 0 {
                self.arena.push(b',');
            }
            self.arena.extend_from_slice(&info.keys[*c as usize]);
            self.arena.extend_from_slice(&self.values[*a..*b]);
        }
        self.arena.push(b'}');
        Some((start, self.arena.len()))
    }

    /// ``row_key``: the primary key's values as a JSON array, or (no primary key) the non-NULL values as an
    /// object with sorted names; ``over`` overlays ``base`` (``{**before, **after}``). None: ``over`` is given and
    /// the overlay lacks a key column (a MINIMAL after image: the key is unchanged).
    fn push_key(
        &mut self,
        layout: &Layout,
        info: &Info,
        base: &Members,
        over: Option<&Members>,
    ) -> Span {
        let start = self.arena.len();
        let get = |name: &[u8]| {
            over.and_then(|o| find(layout, o, name))
                .or_else(|| find(layout, base, name))
        };
        match &info.pk {
            Some(pk) if !pk.is_empty() => {
                let mut parts = Vec::with_capacity(pk.len());
                for &i in pk {
                    match get(&layout.columns[i as usize].name) {
                        Some(&(_, a, b)) => parts.push(Some((a, b))),
                        None if over.is_some() => return None,
                        None => parts.push(None),
                    }
                }
                self.arena.push(b'[');
                for (k, v) in parts.into_iter().enumerate() {
                    if k > 0 {
                        self.arena.push(b',');
                    }
                    match v {
                        Some((a, b)) => self.arena.extend_from_slice(&self.values[a..b]),
                        None => self.arena.extend_from_slice(b"null"),
                    }
                }
                self.arena.push(b']');
            }
            _ => {
                let mut all: Vec<(u32, usize, usize)> = Vec::with_capacity(base.len());
                for m in over.into_iter().flatten().chain(base.iter()) {
                    let name = &layout.columns[m.0 as usize].name;
                    if !all
                        .iter()
                        .any(|(c, _, _)| &layout.columns[*c as usize].name == name)
                    {
                        all.push(*m);
                    }
                }
                all.retain(|&(_, a, b)| &self.values[a..b] != b"null");
                all.sort_by(|x, y| {
                    layout.columns[x.0 as usize]
                        .name
                        .cmp(&layout.columns[y.0 as usize].name)
                });
                return self.push_object(info, &all);
            }
        }
        Some((start, self.arena.len()))
    }

    /// Whether a rendered image holds a temporal column's value that has no typed value: a DATE's text as
    /// ``typed_date`` reads it, a DATETIME's or TIMESTAMP's as ``typed_datetime`` does (NULL has none to lack; a
    /// value that is not a JSON string counts).
    fn invalid_temporal_in(&self, layout: &Layout, m: &Members) -> bool {
        m.iter().any(|&(c, a, b)| {
            let col = &layout.columns[c as usize];
            let date =
                matches!(col.type_code, T_DATE | T_NEWDATE) || matches!(col.kind, Kind::Date);
            let datetime = matches!(
                col.type_code,
                T_TIMESTAMP | T_DATETIME | T_TIMESTAMP2 | T_DATETIME2
            ) || matches!(
                col.kind,
                Kind::DateTime
                    | Kind::Timestamp
                    | Kind::DateTime2(_)
                    | Kind::Timestamp2(_)
                    | Kind::HiresDateTime(_)
                    | Kind::HiresTimestamp(_)
            );
            if !date && !datetime {
                return false;
            }
            let v = &self.values[a..b];
            if v == b"null" {
                return false;
            }
            match v.strip_prefix(b"\"").and_then(|t| t.strip_suffix(b"\"")) {
                Some(text) if date => typed_date(text).is_none(),
                Some(text) => typed_datetime(text).is_none(),
                None => true,
            }
        })
    }

    fn push_diffs(
        &mut self,
        layout: &Layout,
        items: &[(u32, Vec<(String, String, Option<String>)>)],
    ) -> Span {
        let start = self.arena.len();
        let a = &mut self.arena;
        a.push(b'{');
        for (k, (col, list)) in items.iter().enumerate() {
            if k > 0 {
                a.push(b',');
            }
            json_str(&layout.columns[*col as usize].name, false, a);
            a.extend_from_slice(b":[");
            for (n, (op, path, value)) in list.iter().enumerate() {
                if n > 0 {
                    a.push(b',');
                }
                a.extend_from_slice(b"{\"op\":");
                json_str(op.as_bytes(), false, a);
                a.extend_from_slice(b",\"path\":");
                json_str(path.as_bytes(), false, a);
                a.extend_from_slice(b",\"value\":");
                match value {
                    Some(v) => json_str(v.as_bytes(), false, a),
                    None => a.extend_from_slice(b"null"),
                }
                a.push(b'}');
            }
            a.push(b']');
        }
        a.push(b'}');
        Some((start, self.arena.len()))
    }

    fn reset_transaction(&mut self) {
        self.pending.clear();
        self.arena.clear();
        self.trx_stated.clear();
        self.trx_filtered = 0;
        self.last_pos = None;
        self.next_row = 0;
        self.deferred = None;
    }

    fn count(&mut self, op: usize) {
        match self.ops.iter_mut().find(|(o, _)| *o == OPS[op]) {
            Some(slot) => slot.1 += 1,
            None => self.ops.push((OPS[op], 1)),
        }
    }

    /// The open transaction's rows, kept: to the ready columns.
    fn commit(&mut self, g: &GroupEnd) {
        let pending = std::mem::take(&mut self.pending);
        for r in &pending {
            self.count(r.op);
            let seq = self.file_seq << FILE_SHIFT
                | (r.pos as i64) << ROW_BITS
                | r.row.min((1 << ROW_BITS) - 1) as i64;
            let (c, arena) = (&mut self.cols, &self.arena);
            let span = |s: Span| s.map(|(a, b)| &arena[a..b]);
            c[0].bytes(self.source.as_bytes());
            c[1].bytes(self.file.as_bytes());
            c[2].int(self.file_seq);
            c[3].int(self.size);
            c[4].bytes(self.sha256.as_bytes());
            c[5].int(r.pos as i64);
            c[6].int(r.row as i64);
            c[7].int(seq);
            c[8].opt_str(g.gtid.map(str::as_bytes));
            c[9].int(g.start as i64);
            c[10].int(g.commit_us);
            let (db, table) = match (&r.info, &r.ddl) {
                (Some(i), _) => (Some(i.db.as_bytes()), Some(i.table.as_bytes())),
                (None, Some((db, _))) => (db.as_deref().map(str::as_bytes), None),
                _ => (None, None),
            };
            c[11].opt_str(db);
            c[12].opt_str(table);
            c[13].bytes(OPS[r.op].as_bytes());
            for (k, s) in [(14, r.before), (15, r.after), (16, r.diffs)] {
                c[k].opt_str(span(s));
            }
            let layout_row = r.op == 3;
            let info = r.info.as_deref();
            c[17].opt_str(info.filter(|_| layout_row).map(|i| i.columns.as_bytes()));
            c[18].opt_str(
                info.filter(|_| layout_row)
                    .and_then(|i| i.primary_key.as_deref())
                    .map(str::as_bytes),
            );
            c[19].opt_str(span(r.key_before));
            c[20].opt_str(span(r.key_after));
            c[21].int(r.event_type as i64);
            c[22].opt_str(r.ddl.as_ref().map(|(_, q)| q.as_bytes()));
            c[23].bytes(self.run.as_bytes());
            c[24].null();
            c[25].opt_str(info.map(|i| i.id.as_bytes()));
            self.rows += 1;
            self.bytes +=
                r.before.map_or(0, |(a, b)| b - a) + r.after.map_or(0, |(a, b)| b - a) + 256;
        }
    }
}

impl Sink for BronzeSink {
    fn rows(&mut self, py: Python<'_>, p: &Processor, r: &RowsEvent) -> Result<(), Fail> {
        // rows outside any transaction belong to none; a transaction from ``end`` on is the next chunk's
        let Some(start) = p.group.as_ref().map(|g| g.start) else {
            return Ok(());
        };
        if self.stop || self.end.is_some_and(|e| start >= e) || self.deferred.is_some() {
            return Ok(());
        }
        if let Err(f) = self.render_rows(py, p, r) {
            self.deferred = Some(f); // the transaction's end (or the reader's next error) decides
        }
        Ok(())
    }

    fn group_end(&mut self, py: Python<'_>, p: &Processor, g: &GroupEnd) -> Result<(), Fail> {
        if self.stop {
            return Ok(());
        }
        if self.end.is_some_and(|e| g.start >= e) {
            self.stop = true;
            self.reset_transaction();
            return Ok(());
        }
        let keep: bool = p
            .delegate
            .call_method1(
                py,
                "transaction",
                (g.gtid, g.kind.name(), self.trx_filtered),
            )?
            .extract(py)?;
        if keep {
            if let Some(f) = self.deferred.take() {
                p.delegate.call_method0(py, "failed")?; // in the error stretch, not in bronze
                return Err(f);
            }
            if let (TrxKind::Ddl, Some(q)) = (g.kind, g.statement) {
                let got: (Option<String>, String) = p
                    .delegate
                    .call_method1(
                        py,
                        "statement_of",
                        (PyBytes::new(py, &q.raw), q.body_end, q.pos, q.payload_pos),
                    )?
                    .extract(py)?;
                self.pending.push(Pending {
                    op: 4,
                    pos: q.at(),
                    row: 0,
                    event_type: q.header.type_code,
                    info: None,
                    before: None,
                    after: None,
                    diffs: None,
                    key_before: None,
                    key_after: None,
                    ddl: Some(got),
                });
            }
            self.commit(g);
        } else {
            for id in self.trx_stated.drain(..) {
                self.stated.remove(&id);
            }
        }
        self.open_at_end = g.kind == TrxKind::Open;
        if !self.open_at_end {
            self.end_pos = g.end;
            self.transactions += 1;
        }
        self.reset_transaction();
        Ok(())
    }
}

impl BronzeSink {
    /// A rows event's bronze rows (a layout row first when its layout is new in the chunk), pending.
    fn render_rows(&mut self, py: Python<'_>, p: &Processor, r: &RowsEvent) -> Result<(), Fail> {
        let info = self.info(py, p, r.layout, r.ev)?;
        let (layout, d) = (r.layout, r.d);
        if !info.keep {
            self.trx_filtered += d.rows.len() as u64;
            return Ok(());
        }
        let at = r.ev.at();
        if self.last_pos != Some(at) {
            self.last_pos = Some(at);
            self.next_row = 0;
        }
        let event_type = r.ev.header.type_code;
        if !self.stated.contains(&info.id) {
            self.stated.insert(info.id.clone());
            self.trx_stated.push(info.id.clone());
            self.pending.push(Pending {
                op: 3,
                pos: at,
                row: self.next_row,
                event_type,
                info: Some(info.clone()),
                before: None,
                after: None,
                diffs: None,
                key_before: None,
                key_after: None,
                ddl: None,
            });
        }
        let op = match op_of(event_type) {
            b"update" => 1,
            b"delete" => 2,
            _ => 0,
        };
        for (i, row) in d.rows.iter().enumerate() {
            self.values.clear();
            let partial = row.partial.is_some();
            let before_cells = row
                .before
                .map(|(a, b)| members(layout, &d.cells[a..b], |_| true));
            let after_cells = row.after.map(|(a, b)| {
                members(layout, &d.cells[a..b], |v| {
                    !(partial && matches!(v, Val::Partial(_)))
                })
            });
            let mut image = |cells: &Option<Vec<&Cell>>| -> Result<Option<Members>, Fail> {
                match cells {
                    Some(c) => self
                        .render(layout, d, c)
                        .map(Some)
                        .map_err(|cell| value_error(py, p, r, i, cell)),
                    None => Ok(None),
                }
            };
            let before = image(&before_cells)?;
            let after = image(&after_cells)?;
            let items = if partial {
                Some(diff_items(py, p, r, i)?)
            } else {
                None
            };
            if let Some(m) = &after {
                if op == 1
                    && !partial
                    && m.len() < layout.columns.len()
                    && !self.minimal.contains(&info.id)
                {
                    self.minimal.insert(info.id.clone());
                }
                if !self.invalid_temporal.contains(&info.id) && self.invalid_temporal_in(layout, m)
                {
                    self.invalid_temporal.insert(info.id.clone());
                }
            }
            let before_json = before.as_ref().and_then(|m| self.push_object(&info, m));
            let after_json = after.as_ref().and_then(|m| self.push_object(&info, m));
            let diffs = items
                .as_ref()
                .and_then(|items| self.push_diffs(layout, items));
            let key_before = before
                .as_ref()
                .and_then(|m| self.push_key(layout, &info, m, None));
            let key_after = after.as_ref().and_then(|m| {
                let empty = Vec::new();
                self.push_key(layout, &info, before.as_ref().unwrap_or(&empty), Some(m))
            });
            self.pending.push(Pending {
                op,
                pos: at,
                row: self.next_row + i as u32,
                event_type,
                info: Some(info.clone()),
                before: before_json,
                after: after_json,
                diffs,
                key_before,
                key_after,
                ddl: None,
            });
        }
        self.next_row += d.rows.len() as u32;
        Ok(())
    }
}
