//! ``binlake rows --format jsonl`` written natively: one JSON object per row change, byte for byte what
//! ``binlake.cli.binlog_cmd.cmd_rows`` prints (``json.dumps`` with ``ensure_ascii=False``; the whole line
//! ``ensure_ascii=True`` when a name holds bytes that are not UTF-8).

use crate::engine::{Processor, RowsEvent, Sink};
use crate::fmt;
use crate::layout::Layout;
use crate::reader::Fail;
use crate::rows::{is_delete, is_update, Cell, Val};
use crate::values::{json_value, py_value};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::io::Write;

pub struct JsonSink {
    pub out: Box<dyn Write>,
    buf: Vec<u8>,
    line: Vec<u8>,
    /// the ``file`` member in UTF-8 and in ASCII form, and whether the UTF-8 form holds surrogate escapes
    file_utf8: Vec<u8>,
    file_ascii: Vec<u8>,
    file_needs_ascii: bool,
}

const FLUSH_AT: usize = 1 << 20;

fn valid(b: &[u8]) -> bool {
    std::str::from_utf8(b).is_ok()
}

/// The members of an image as ``dict`` keeps them: a duplicate name keeps its first position and its last value.
pub fn members<'c, 'a>(
    layout: &Layout,
    cells: &'c [Cell<'a>],
    keep: impl Fn(&Val) -> bool,
) -> Vec<&'c Cell<'a>> {
    let mut out: Vec<&Cell> = Vec::with_capacity(cells.len());
    for c in cells.iter().filter(|c| keep(&c.val)) {
        if layout.dup_names {
            let name = &layout.columns[c.col as usize].name;
            if let Some(slot) = out
                .iter_mut()
                .find(|o| &layout.columns[o.col as usize].name == name)
            {
                *slot = c;
                continue;
            }
        }
        out.push(c);
    }
    out
}

impl JsonSink {
    pub fn new(
        out: Box<dyn Write>,
        file_utf8: Vec<u8>,
        file_ascii: Vec<u8>,
        file_needs_ascii: bool,
    ) -> JsonSink {
        JsonSink {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            line: Vec::new(),
            file_utf8,
            file_ascii,
            file_needs_ascii,
        }
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        self.out.flush()
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        py: Python<'_>,
        p: &Processor,
        r: &RowsEvent,
        i: usize,
        op: &[u8],
        ascii: bool,
        diff_items: &[(u32, Vec<(String, String, Option<String>)>)],
    ) -> Result<bool, Fail> {
        let (layout, d) = (r.layout, r.d);
        let row = &d.rows[i];
        let l = &mut self.line;
        let mut needs_ascii = self.file_needs_ascii;
        l.clear();
        l.extend_from_slice(b"{\"file\": ");
        l.extend_from_slice(if ascii {
            &self.file_ascii
        } else {
            &self.file_utf8
        });
        l.extend_from_slice(
            format!(
                ", \"pos\": {}, \"row\": {}, \"gtid\": ",
                r.ev.at(),
                r.first_row as usize + i
            )
            .as_bytes(),
        );
        match r.gtid {
            Some(g) => fmt::json_string(g, ascii, l),
            None => l.extend_from_slice(b"null"),
        }
        l.extend_from_slice(b", \"db\": ");
        fmt::json_str(&layout.db, ascii, l);
        l.extend_from_slice(b", \"table\": ");
        fmt::json_str(&layout.table, ascii, l);
        let checked = layout.names_utf8; // every name is UTF-8: no name turns the line to ASCII
        needs_ascii |= !checked && (!valid(&layout.db) || !valid(&layout.table));
        l.extend_from_slice(b", \"op\": \"");
        l.extend_from_slice(op);
        l.push(b'"');
        for (key, image, partial) in [
            (&b"before"[..], row.before, false),
            (&b"after"[..], row.after, row.partial.is_some()),
        ] {
            l.extend_from_slice(b", \"");
            l.extend_from_slice(key);
            l.extend_from_slice(b"\": ");
            let Some((a, b)) = image else {
                l.extend_from_slice(b"null");
                continue;
            };
            let cells = members(layout, &d.cells[a..b], |v| {
                !(partial && matches!(v, Val::Partial(_)))
            });
            if cells.is_empty() {
                l.extend_from_slice(b"{}");
                continue;
            }
            l.push(b'{');
            for (k, c) in cells.iter().enumerate() {
                if k > 0 {
                    l.extend_from_slice(b", ");
                }
                let col = &layout.columns[c.col as usize];
                if checked && !ascii {
                    l.extend_from_slice(&layout.json_keys[c.col as usize]);
                } else {
                    fmt::json_str(&col.name, ascii, l);
                    needs_ascii |= !valid(&col.name);
                    l.extend_from_slice(b": ");
                }
                if json_value(&c.val, col, d, ascii, false, l).is_err() {
                    return Err(value_error(py, p, r, i, c));
                }
            }
            l.push(b'}');
        }
        if row.partial.is_some() {
            l.extend_from_slice(b", \"diffs\": {");
            for (k, (col, items)) in diff_items.iter().enumerate() {
                if k > 0 {
                    l.extend_from_slice(b", ");
                }
                let name = &layout.columns[*col as usize].name;
                fmt::json_str(name, ascii, l);
                needs_ascii |= !valid(name);
                l.extend_from_slice(b": [");
                for (n, (op, path, value)) in items.iter().enumerate() {
                    if n > 0 {
                        l.extend_from_slice(b", ");
                    }
                    l.extend_from_slice(b"{\"op\": ");
                    fmt::json_string(op, ascii, l);
                    l.extend_from_slice(b", \"path\": ");
                    fmt::json_string(path, ascii, l);
                    l.extend_from_slice(b", \"value\": ");
                    match value {
                        Some(v) => fmt::json_string(v, ascii, l),
                        None => l.extend_from_slice(b"null"),
                    }
                    l.push(b'}');
                }
                l.push(b']');
            }
            l.push(b'}');
        }
        l.extend_from_slice(b"}\n");
        Ok(needs_ascii)
    }
}

/// The error ``binlake rows`` raises for a value with no JSON form (the Python renderer names it).
pub fn value_error(py: Python<'_>, p: &Processor, r: &RowsEvent, i: usize, c: &Cell) -> Fail {
    let col = &r.layout.columns[c.col as usize];
    let made = py_value(py, &c.val).and_then(|(kind, value)| {
        p.delegate.call_method1(
            py,
            "value_error",
            (
                kind,
                value,
                PyBytes::new(py, &col.name),
                r.first_row as usize + i,
                PyBytes::new(py, &r.layout.db),
                PyBytes::new(py, &r.layout.table),
                r.ev.at(),
                r.ev.header.type_code,
            ),
        )
    });
    match made {
        Ok(e) => Fail::Py(PyErr::from_value(e.into_bound(py))),
        Err(e) => Fail::Py(e),
    }
}

/// The diffs of a row's partial JSON columns as (column, [(op, path, value text)]), in ``dict`` order,
/// rendered by the Python decoder (``binlake.binlog.render.json_diffs``); its error carries the row's place.
pub fn diff_items(
    py: Python<'_>,
    p: &Processor,
    r: &RowsEvent,
    i: usize,
) -> Result<Vec<(u32, Vec<(String, String, Option<String>)>)>, Fail> {
    let row = &r.d.rows[i];
    let Some((a, b)) = row.after else {
        return Ok(Vec::new());
    };
    let cells = members(r.layout, &r.d.cells[a..b], |v| matches!(v, Val::Partial(_)));
    let mut out = Vec::with_capacity(cells.len());
    for c in cells {
        let Val::Partial(k) = c.val else { continue };
        let items = p.delegate.call_method1(
            py,
            "diff_items",
            (
                r.diffs[k].clone_ref(py),
                PyBytes::new(py, &r.layout.columns[c.col as usize].name),
                r.first_row as usize + i,
                PyBytes::new(py, &r.layout.db),
                PyBytes::new(py, &r.layout.table),
                r.ev.at(),
                r.ev.header.type_code,
            ),
        )?;
        out.push((c.col, items.extract(py)?));
    }
    Ok(out)
}

pub fn op_of(t: u8) -> &'static [u8] {
    if is_update(t) {
        b"update"
    } else if is_delete(t) {
        b"delete"
    } else {
        b"insert"
    }
}

impl Sink for JsonSink {
    fn rows(&mut self, py: Python<'_>, p: &Processor, r: &RowsEvent) -> Result<(), Fail> {
        let op = op_of(r.ev.header.type_code);
        for i in 0..r.d.rows.len() {
            let items = if r.d.rows[i].partial.is_some() {
                diff_items(py, p, r, i)
            } else {
                Ok(Vec::new())
            };
            let items = match items {
                Ok(items) => items,
                Err(f) => {
                    // the row's values render first: their error wins
                    self.record(py, p, r, i, op, false, &[])?;
                    return Err(f);
                }
            };
            if self.record(py, p, r, i, op, false, &items)? {
                self.record(py, p, r, i, op, true, &items)?;
            }
            self.buf.extend_from_slice(&self.line);
            if self.buf.len() >= FLUSH_AT {
                self.out
                    .write_all(&self.buf)
                    .map_err(|e| Fail::Py(e.into()))?;
                self.buf.clear();
            }
        }
        Ok(())
    }
}
