//! ``binlake_native``: binlake's native binlog decoder core. Python front: ``binlake.binlog.columnar`` (Arrow
//! batches per table) and ``binlake.binlog.native`` (loading, the Python decoder's help, ``binlake rows``).
//! It also reads ``binlake snapshot``'s rows (``textrows``: ``binlake.snapshot.server``).
//!
//! It decodes what the pure-Python decoder (``binlake.binlog``, the reference) decodes, to the same values;
//! where an event's body does not decode it asks the Python decoder to decode that one event again, so every
//! error is the Python decoder's typed error with its file, offset and expectation. A panic is caught and
//! raised as RuntimeError; it never crosses into Python.

// A failure carries a Python exception or the reader's error with its file, offset and expectation; boxing it
// would change every signature for nothing on the path that succeeds.
#![allow(clippy::result_large_err)]
// The entry points hand Python tuples it unpacks; each shape is documented where it is built.
#![allow(clippy::type_complexity)]

mod arrow;
mod bronze;
mod engine;
mod fmt;
mod json;
mod jsonl;
mod layout;
mod reader;
mod rows;
mod textrows;
mod values;

use engine::Processor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use reader::{Arg, Fail, Reader, Source};
use std::fs::File;
use std::io::{BufReader, Cursor};
use std::mem::ManuallyDrop;
use std::os::fd::FromRawFd;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Events between two looks at Python's signals (Ctrl-C interrupts a long read).
const SIGNAL_EVERY: u32 = 4096;

/// Options shared by both entry points, as ``binlake.binlog.api.ReadOptions``.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Options {
    names: Vec<String>,
    registered: Vec<u8>,
    verify_checksum: bool,
    max_event_size: u64,
    start_position: Option<u64>,
    stop_at_incomplete: bool,
    schema: bool,
}

fn source(src: &Bound<'_, PyAny>) -> PyResult<Box<dyn Source>> {
    if let Ok(b) = src.downcast::<PyBytes>() {
        return Ok(Box::new(Cursor::new(b.as_bytes().to_vec())));
    }
    let fd: i32 = src.extract()?;
    // the caller hands over a descriptor of its own (os.dup)
    Ok(Box::new(BufReader::with_capacity(1 << 20, unsafe {
        File::from_raw_fd(fd)
    })))
}

fn processor(src: &Bound<'_, PyAny>, o: Options, delegate: PyObject) -> PyResult<Processor> {
    let mut registered = vec![false; 256];
    for t in o.registered {
        registered[t as usize] = true;
    }
    let reader = Reader::new(
        source(src)?,
        o.names,
        o.verify_checksum,
        o.max_event_size,
        o.start_position,
        o.stop_at_incomplete,
    );
    Ok(Processor::new(reader, delegate, registered, o.schema))
}

fn to_pyerr(py: Python<'_>, p: &Processor, f: Fail) -> PyErr {
    match p.resolve(py, f) {
        Fail::Py(e) => e,
        Fail::Typed {
            class,
            message,
            offset,
            event_type,
            expected,
            found,
        } => {
            let arg = |a: Option<Arg>| -> PyObject {
                match a {
                    None => py.None(),
                    Some(Arg::Int(x)) => x
                        .into_pyobject(py)
                        .map(|o| o.into_any().unbind())
                        .unwrap_or_else(|_| py.None()),
                    Some(Arg::Str(x)) => x
                        .into_pyobject(py)
                        .map(|o| o.into_any().unbind())
                        .unwrap_or_else(|_| py.None()),
                }
            };
            match p.delegate.call_method1(
                py,
                "make_error",
                (
                    class,
                    message,
                    offset,
                    event_type,
                    arg(expected),
                    arg(found),
                ),
            ) {
                Ok(e) => PyErr::from_value(e.into_bound(py)),
                Err(e) => e,
            }
        }
        Fail::Event(_) => PyRuntimeError::new_err("unresolved event error"),
    }
}

fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(PyRuntimeError::new_err(format!(
                "binlake's native decoder failed ({}); read this file with \
                                                 engine='python' and report it",
                what
            )))
        }
    }
}

/// What a read saw: (unknown event types -> count, [(db, table, assumptions)], the incomplete final event's
/// error or None).
fn stats<'py>(
    py: Python<'py>,
    p: &mut Processor,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>, PyObject)> {
    let unknown = PyDict::new(py);
    for (t, n) in &p.unknown {
        unknown.set_item(t, n)?;
    }
    let notes = PyList::empty(py);
    for (db, table, a) in &p.assumptions {
        notes.append((PyBytes::new(py, db), PyBytes::new(py, table), a.clone()))?;
    }
    let incomplete = match p.reader.incomplete.take() {
        Some(f) => to_pyerr(py, p, f).into_value(py).into_any(),
        None => py.None(),
    };
    Ok((unknown, notes, incomplete))
}

/// Columnar batches of one binlog, pulled by ``binlake.binlog.columnar``.
#[pyclass(unsendable)]
struct Batches {
    p: Processor,
    sink: arrow::ArrowSink,
    batch_rows: usize,
    finished: bool,
    steps: u32,
}

#[pymethods]
impl Batches {
    #[new]
    fn new(
        src: &Bound<'_, PyAny>,
        options: Options,
        delegate: PyObject,
        temporal_text: bool,
        batch_rows: usize,
    ) -> PyResult<Self> {
        Ok(Batches {
            p: processor(src, options, delegate)?,
            sink: arrow::ArrowSink::new(temporal_text, 2 * batch_rows.max(1)),
            batch_rows: batch_rows.max(1),
            finished: false,
            steps: 0,
        })
    }

    /// The next ready batches (a list of (db, table, columns, primary key, capsules)); None at the end.
    fn next_batches<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        guarded(|| loop {
            if !self.sink.ready.is_empty() {
                let out = PyList::empty(py);
                for r in self.sink.ready.drain(..) {
                    out.append(arrow::ready_tuple(py, r)?)?;
                }
                return Ok(Some(out));
            }
            if self.finished {
                return Ok(None);
            }
            self.steps = self.steps.wrapping_add(1);
            if self.steps.is_multiple_of(SIGNAL_EVERY) {
                py.check_signals()?;
            }
            match self.p.step(py, &mut self.sink) {
                Ok(true) => {
                    if self.p.group.is_none() && self.sink.total >= self.batch_rows {
                        self.sink.flush();
                    }
                }
                Ok(false) => {
                    self.finished = true;
                    self.sink.flush();
                }
                Err(f) => {
                    self.finished = true;
                    return Err(to_pyerr(py, &self.p, f));
                }
            }
        })
    }

    fn stats<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>, PyObject)> {
        stats(py, &mut self.p)
    }
}

/// The bronze rows of one chunk (``binlake.lake.bronze_native``), pulled as record batches.
#[pyclass(unsendable)]
struct BronzeRows {
    p: Processor,
    sink: bronze::BronzeSink,
    batch_rows: usize,
    finished: bool,
    error: Option<PyErr>,
}

#[pymethods]
impl BronzeRows {
    /// ``head``: (source, file name, file sequence, file size, SHA-256, ingest run); ``end``: ``ChunkTask.end``.
    #[new]
    fn new(
        src: &Bound<'_, PyAny>,
        options: Options,
        delegate: PyObject,
        head: (String, String, i64, i64, String, String),
        end: Option<u64>,
        batch_rows: usize,
    ) -> PyResult<Self> {
        let (source, file, file_seq, size, sha256, run) = head;
        Ok(BronzeRows {
            p: processor(src, options, delegate)?,
            sink: bronze::BronzeSink::new(source, file, file_seq, size, sha256, run, end),
            batch_rows: batch_rows.max(1),
            finished: false,
            error: None,
        })
    }

    /// The next batch of whole transactions' rows (schema and array capsules); None at the end. A decode error
    /// is raised after the rows of the transactions before it have been handed on.
    fn next_batch<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        guarded(|| {
            let mut steps = 0u32;
            while !self.finished && !self.sink.full(self.batch_rows) {
                steps = steps.wrapping_add(1);
                if steps.is_multiple_of(SIGNAL_EVERY) {
                    py.check_signals()?;
                }
                match self.p.step(py, &mut self.sink) {
                    Ok(more) => self.finished = !more || self.sink.stop,
                    Err(f) => {
                        // an error rendering rows the reader read before its own comes first (file order)
                        let f = self.sink.deferred.take().unwrap_or(f);
                        self.finished = true;
                        self.error = Some(to_pyerr(py, &self.p, f));
                    }
                }
            }
            if self.sink.rows > 0 {
                return Ok(Some(arrow::capsules(py, self.sink.take())?));
            }
            match self.error.take() {
                Some(e) => Err(e),
                None => Ok(None),
            }
        })
    }

    /// (layout ids with an UPDATE whose after image lacks columns, layout ids with an after image holding a zero
    /// or invalid date), each sorted: what the rows rendered so far hold.
    fn image_facts(&self) -> (Vec<String>, Vec<String>) {
        let sorted = |s: &std::collections::HashSet<String>| {
            let mut v: Vec<String> = s.iter().cloned().collect();
            v.sort();
            v
        };
        (
            sorted(&self.sink.minimal),
            sorted(&self.sink.invalid_temporal),
        )
    }

    /// (transactions, end of the last complete one, whether the input ended inside one, events read, unknown
    /// events, [(op, rows)] in first-seen order, the incomplete final event's error or None).
    #[allow(clippy::type_complexity)]
    fn counters(
        &mut self,
        py: Python<'_>,
    ) -> PyResult<(u64, u64, bool, u64, u64, Vec<(&'static str, u64)>, PyObject)> {
        let (unknown, _, incomplete) = stats(py, &mut self.p)?;
        let unknown_total: u64 = unknown
            .values()
            .iter()
            .map(|v| v.extract::<u64>())
            .sum::<PyResult<u64>>()?;
        let s = &self.sink;
        Ok((
            s.transactions,
            s.end_pos,
            s.open_at_end,
            self.p.events,
            unknown_total,
            s.ops.clone(),
            incomplete,
        ))
    }
}

/// ``binlake rows --format jsonl`` to the file descriptor ``fd``; returns what the read saw (see ``stats``).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn rows_jsonl<'py>(
    py: Python<'py>,
    src: &Bound<'py, PyAny>,
    options: Options,
    delegate: PyObject,
    fd: i32,
    file_utf8: Vec<u8>,
    file_ascii: Vec<u8>,
    file_needs_ascii: bool,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>, PyObject)> {
    guarded(|| {
        let mut p = processor(src, options, delegate)?;
        let out = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
        struct Borrowed(ManuallyDrop<File>);
        impl std::io::Write for Borrowed {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                (&*self.0).write(b)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut sink = jsonl::JsonSink::new(
            Box::new(Borrowed(out)),
            file_utf8,
            file_ascii,
            file_needs_ascii,
        );
        let mut steps = 0u32;
        let result = loop {
            steps = steps.wrapping_add(1);
            if steps.is_multiple_of(SIGNAL_EVERY) {
                if let Err(e) = py.check_signals() {
                    break Err(Fail::Py(e)); // Ctrl-C
                }
            }
            match p.step(py, &mut sink) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(f) => break Err(f),
            }
        };
        sink.flush()?;
        if let Err(f) = result {
            return Err(to_pyerr(py, &p, f));
        }
        stats(py, &mut p)
    })
}

#[pymodule]
fn binlake_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Batches>()?;
    m.add_class::<BronzeRows>()?;
    m.add_function(wrap_pyfunction!(rows_jsonl, m)?)?;
    m.add_class::<textrows::TextRows>()?;
    m.add("ServerError", m.py().get_type::<textrows::ServerError>())?;
    m.add(
        "ProtocolError",
        m.py().get_type::<textrows::ProtocolError>(),
    )?;
    m.add(
        "__doc__",
        "binlake's native binlog decoder core (see binlake.binlog.columnar)",
    )?;
    // the interface binlake.binlog.native speaks: a module built from other sources is not used
    m.add("API", 6)?;
    Ok(())
}
