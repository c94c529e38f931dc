//! The event loop over a binlog stream, as ``binlake.binlog.reader.read_events`` (``Binlog_file_reader``):
//! magic, FORMAT_DESCRIPTION, fenced bodies, CRC32, the start position, and the events inside a
//! TRANSACTION_PAYLOAD decompressed as a stream (``Payload_event_buffer_istream``), memory bounded by the
//! largest event. Reader-level errors are stated here with the Python reader's words; an error inside an
//! event body is left to the Python decoder (``Fail::Event``), which names it exactly.

use pyo3::prelude::*;
use std::io::{Read, Seek, SeekFrom};

pub const HEADER_LEN: usize = 19;
pub const FORMAT_DESCRIPTION_EVENT: u8 = 15;
pub const TRANSACTION_PAYLOAD_EVENT: u8 = 40;
const START_EVENT_V3: u8 = 1;
const ROTATE_EVENT: u8 = 4;
const START_ENCRYPTION_EVENT: u8 = 164;

#[derive(Clone, Debug)]
pub enum Arg {
    Int(i128),
    Str(String),
}

/// Why a read stopped.
pub enum Fail {
    /// a ``binlake.binlog.errors`` class with its fields, as the Python reader raises it
    Typed {
        class: &'static str,
        message: String,
        offset: Option<u64>,
        event_type: Option<String>,
        expected: Option<Arg>,
        found: Option<Arg>,
    },
    /// the body of this event does not decode: the Python decoder decodes it again and raises its error
    Event(Box<EventRef>),
    Py(PyErr),
}

impl From<PyErr> for Fail {
    fn from(e: PyErr) -> Self {
        Fail::Py(e)
    }
}

/// An event to hand to the Python decoder: its bytes, where it is, and (rows events) its table's TABLE_MAP.
pub struct EventRef {
    pub raw: Vec<u8>,
    pub body_end: usize,
    pub pos: u64,
    pub payload_pos: Option<u64>,
    pub table_map: Option<(Vec<u8>, usize)>,
}

pub fn typed(
    class: &'static str,
    message: impl Into<String>,
    offset: Option<u64>,
    event_type: Option<String>,
    expected: Option<Arg>,
    found: Option<Arg>,
) -> Fail {
    Fail::Typed {
        class,
        message: message.into(),
        offset,
        event_type,
        expected,
        found,
    }
}

fn s(x: impl Into<String>) -> Option<Arg> {
    Some(Arg::Str(x.into()))
}
fn i(x: impl Into<i128>) -> Option<Arg> {
    Some(Arg::Int(x.into()))
}

#[derive(Clone, Copy, Debug)]
pub struct Header {
    pub timestamp: u32,
    pub type_code: u8,
    pub server_id: u32,
    pub size: u32,
}

impl Header {
    fn parse(b: &[u8]) -> Header {
        let u32at = |k: usize| u32::from_le_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
        Header {
            timestamp: u32at(0),
            type_code: b[4],
            server_id: u32at(5),
            size: u32at(9),
        }
    }
}

/// One event: ``raw`` holds the whole event (header included); the body is ``raw[19..body_end]``. ``pos`` is the
/// file offset, or for an event inside a TRANSACTION_PAYLOAD its offset in the uncompressed payload, with
/// ``payload_pos`` the payload event's file offset.
pub struct Event {
    pub pos: u64,
    pub payload_pos: Option<u64>,
    pub header: Header,
    pub raw: Vec<u8>,
    pub body_end: usize,
}

impl Event {
    /// The position row changes and errors are reported at.
    pub fn at(&self) -> u64 {
        self.payload_pos.unwrap_or(self.pos)
    }
    pub fn to_ref(&self, table_map: Option<(Vec<u8>, usize)>) -> Fail {
        Fail::Event(Box::new(EventRef {
            raw: self.raw.clone(),
            body_end: self.body_end,
            pos: self.pos,
            payload_pos: self.payload_pos,
            table_map,
        }))
    }
}

pub trait Source: Read + Seek {}
impl<T: Read + Seek> Source for T {}

/// The FORMAT_DESCRIPTION facts decoding needs (decoded by the Python decoder: once per file).
pub struct Fde {
    pub checksum_crc32: bool,
    pub post_header_lengths: Vec<u8>,
    pub mariadb: bool,
}

impl Fde {
    pub fn post_header_len(&self, type_code: u8, default: u8) -> u8 {
        let t = type_code as usize;
        if t > 0 && t <= self.post_header_lengths.len() {
            self.post_header_lengths[t - 1]
        } else {
            default
        }
    }
}

struct Payload {
    reader: Box<dyn Read>,
    limit: u64,
    inner: u64,
    payload_pos: u64,
}

pub struct Reader {
    src: Box<dyn Source>,
    pub names: Vec<String>,
    verify: bool,
    pub max_event: u64,
    start_position: Option<u64>,
    stop_at_incomplete: bool,
    pub pos: u64,
    started: bool,
    first: bool,
    skip_to: Option<u64>,
    pub fde: Option<Fde>,
    encrypted: Option<(u8, u32)>,
    payload: Option<Payload>,
    pending_payload: Option<(u64, Vec<u8>, u64, u64)>,
    pub incomplete: Option<Fail>,
    done: bool,
}

fn read_full(src: &mut dyn Source, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match src.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn io_err(e: std::io::Error) -> Fail {
    Fail::Py(e.into())
}

impl Reader {
    pub fn new(
        src: Box<dyn Source>,
        names: Vec<String>,
        verify: bool,
        max_event: u64,
        start_position: Option<u64>,
        stop_at_incomplete: bool,
    ) -> Reader {
        Reader {
            src,
            names,
            verify,
            max_event,
            start_position,
            stop_at_incomplete,
            pos: 4,
            started: false,
            first: true,
            skip_to: None,
            fde: None,
            encrypted: None,
            payload: None,
            pending_payload: None,
            incomplete: None,
            done: false,
        }
    }

    pub fn type_name(&self, t: u8) -> String {
        self.names[t as usize].clone()
    }

    fn incomplete(&mut self, f: Fail) -> Result<Option<Event>, Fail> {
        self.done = true;
        if self.stop_at_incomplete {
            self.incomplete = Some(f);
            Ok(None)
        } else {
            Err(f)
        }
    }

    /// Start reading the events inside the TRANSACTION_PAYLOAD just returned (after the caller decoded its
    /// header fields): compression type, payload bytes, declared uncompressed size, the payload's offset.
    pub fn open_payload(
        &mut self,
        compression: u64,
        payload: Vec<u8>,
        uncompressed: u64,
        pos: u64,
    ) {
        self.pending_payload = Some((compression, payload, uncompressed, pos));
    }

    fn stop<T>(&mut self, f: Fail) -> Result<T, Fail> {
        self.done = true;
        self.payload = None;
        Err(f)
    }

    pub fn next(
        &mut self,
        on_fde: &mut dyn FnMut(&Event) -> Result<Fde, Fail>,
    ) -> Result<Option<Event>, Fail> {
        if let Some((kind, data, size, pos)) = self.pending_payload.take() {
            let payload_size = data.len() as u64;
            let reader: Box<dyn Read> = match kind {
                // one frame, as python-zstandard's stream_reader reads it (the same libzstd)
                0 => {
                    match zstd::stream::read::Decoder::with_buffer(std::io::Cursor::new(data)) {
                        Ok(d) => Box::new(d.single_frame()),
                        Err(e) => {
                            let f = payload_error(pos, format!("compressed payload does not decompress: zstd decompress error: {}", e));
                            return self.stop(f);
                        }
                    }
                }
                255 => Box::new(std::io::Cursor::new(data)),
                _ => {
                    let f = typed(
                        "UnsupportedError",
                        "unknown TRANSACTION_PAYLOAD compression type",
                        Some(pos),
                        Some("TRANSACTION_PAYLOAD_EVENT".into()),
                        s("0 (ZSTD) or 255 (NONE)"),
                        i(kind),
                    );
                    return self.stop(f);
                }
            };
            self.payload = Some(Payload {
                reader,
                limit: if kind == 0 { size } else { payload_size },
                inner: 0,
                payload_pos: pos,
            });
        }
        if self.payload.is_some() {
            match self.next_inner()? {
                Some(ev) => return Ok(Some(ev)),
                None => self.payload = None,
            }
        }
        if self.done {
            return Ok(None);
        }
        if !self.started {
            self.started = true;
            if let Some(sp) = self.start_position {
                if !(4..(1u64 << 63)).contains(&sp) {
                    return Err(typed(
                        "StartPositionError",
                        "start position is not an offset in a binlog",
                        None,
                        None,
                        s(format!("4..{}", (1u64 << 63) - 1)),
                        i(sp),
                    ));
                }
            }
            let mut magic = [0u8; 4];
            let n = read_full(&mut *self.src, &mut magic).map_err(io_err)?;
            if &magic[..n] != b"\xfebin" {
                let hexed: String = magic[..n].iter().map(|b| format!("{:02x}", b)).collect();
                if b"\xfebin".starts_with(&magic[..n]) {
                    let f = typed(
                        "IncompleteEventError",
                        "file ends inside the 4-byte binlog magic",
                        Some(0),
                        None,
                        s("4 bytes"),
                        s(format!("{} bytes", n)),
                    );
                    return self.incomplete(f);
                }
                self.done = true;
                return Err(typed(
                    "NotABinlogError",
                    "not a binlog: bad magic number",
                    Some(0),
                    None,
                    s("fe62696e"),
                    s(hexed),
                ));
            }
        }
        let pos = self.pos;
        let mut head = [0u8; HEADER_LEN];
        let n = read_full(&mut *self.src, &mut head).map_err(io_err)?;
        if n == 0 {
            self.done = true;
            return Ok(None);
        }
        if let Some((scheme, kv)) = self.encrypted {
            self.done = true;
            return Err(typed(
                "EncryptedBinlogError",
                "events after MariaDB START_ENCRYPTION_EVENT are encrypted",
                Some(pos),
                None,
                s("plain events"),
                s(format!("encryption scheme {}, key version {}", scheme, kv)),
            ));
        }
        if n < HEADER_LEN {
            let f = typed(
                "IncompleteEventError",
                "incomplete final event: file ends inside an event header",
                Some(pos),
                None,
                s("19 header bytes"),
                s(format!("{} bytes", n)),
            );
            return self.incomplete(f);
        }
        let header = Header::parse(&head);
        let size = header.size as u64;
        let t = header.type_code;
        if size < HEADER_LEN as u64 {
            self.done = true;
            return Err(typed(
                "CorruptEventError",
                "impossible event length",
                Some(pos),
                Some(self.type_name(t)),
                s(format!("19..{} bytes", self.max_event)),
                i(size),
            ));
        }
        if size > self.max_event {
            self.done = true;
            return Err(typed(
                "EventTooLargeError",
                "event larger than the maximum event size",
                Some(pos),
                Some(self.type_name(t)),
                s(format!("at most {} bytes", self.max_event)),
                i(size),
            ));
        }
        if let Some(largest) = largest_event(t, self.fde.as_ref().is_none_or(|f| f.checksum_crc32))
        {
            if size > largest {
                self.done = true;
                return Err(typed(
                    "CorruptEventError",
                    "event larger than any event of its type",
                    Some(pos),
                    Some(self.type_name(t)),
                    s(format!("at most {} bytes", largest)),
                    i(size),
                ));
            }
        }
        if self.first
            && ![FORMAT_DESCRIPTION_EVENT, START_EVENT_V3, ROTATE_EVENT].contains(&header.type_code)
        {
            self.done = true;
            return Err(typed(
                "NotABinlogError",
                "first event is not a FORMAT_DESCRIPTION_EVENT",
                Some(pos),
                Some(self.type_name(t)),
                s("FORMAT_DESCRIPTION_EVENT (15)"),
                i(header.type_code),
            ));
        }
        let mut raw = Vec::with_capacity(size as usize);
        raw.extend_from_slice(&head);
        let got = (&mut *self.src)
            .take(size - HEADER_LEN as u64)
            .read_to_end(&mut raw)
            .map_err(io_err)?;
        if got < size as usize - HEADER_LEN {
            let f = typed(
                "IncompleteEventError",
                "incomplete final event: file ends inside the event",
                Some(pos),
                Some(self.type_name(t)),
                s(format!("{} bytes", size)),
                s(format!("{} bytes", HEADER_LEN + got)),
            );
            return self.incomplete(f);
        }
        let size = size as usize;
        let mut ev = Event {
            pos,
            payload_pos: None,
            header,
            raw,
            body_end: size,
        };
        let crc_at = |raw: &[u8], at: usize| {
            u32::from_le_bytes([raw[at], raw[at + 1], raw[at + 2], raw[at + 3]])
        };
        if header.type_code == FORMAT_DESCRIPTION_EVENT {
            let fde = on_fde(&ev)?;
            if fde.checksum_crc32 && self.verify {
                // the server clears LOG_EVENT_BINLOG_IN_USE_F at close without updating the checksum
                let mut h = crc32fast::Hasher::new();
                h.update(&ev.raw[..17]);
                h.update(&[ev.raw[17] & !1]);
                h.update(&ev.raw[18..size - 4]);
                self.check_crc(h.finalize(), crc_at(&ev.raw, size - 4), pos, t)?;
            }
            self.fde = Some(fde);
        } else if self.fde.as_ref().is_some_and(|f| f.checksum_crc32) {
            if size < HEADER_LEN + 4 {
                self.done = true;
                return Err(typed(
                    "CorruptEventError",
                    "event too short for its checksum",
                    Some(pos),
                    Some(self.type_name(t)),
                    s(">= 23 bytes"),
                    i(size as u64),
                ));
            }
            ev.body_end = size - 4;
            if self.verify {
                self.check_crc(
                    crc32fast::hash(&ev.raw[..size - 4]),
                    crc_at(&ev.raw, size - 4),
                    pos,
                    t,
                )?;
            }
        }
        Ok(Some(ev))
    }

    fn check_crc(&mut self, actual: u32, stored: u32, pos: u64, t: u8) -> Result<(), Fail> {
        if actual != stored {
            self.done = true;
            return Err(typed(
                "ChecksumMismatchError",
                "CRC32 mismatch",
                Some(pos),
                Some(self.type_name(t)),
                s(format!("0x{:08x}", actual)),
                s(format!("0x{:08x}", stored)),
            ));
        }
        Ok(())
    }

    /// After the caller decoded an outer event: START_ENCRYPTION bookkeeping, the start position (checked and
    /// skipped to after the first event), and the next event's offset.
    pub fn after_event(&mut self, ev: &Event, encryption: Option<(u8, u32)>) -> Result<(), Fail> {
        if ev.header.type_code == START_ENCRYPTION_EVENT {
            if let Some(e) = encryption {
                self.encrypted = Some(e);
            }
        }
        let size = ev.header.size as u64;
        if self.first {
            if let Some(sp) = self.start_position.filter(|&sp| sp != 4) {
                let tname = self.type_name(ev.header.type_code);
                if sp < ev.pos + size {
                    self.done = true;
                    return Err(typed(
                        "StartPositionError",
                        "start position is inside the first event",
                        Some(sp),
                        Some(tname),
                        s(format!("4 or an offset from {}", ev.pos + size)),
                        i(sp),
                    ));
                }
                let here = self.src.stream_position().map_err(io_err)?;
                let end = self.src.seek(SeekFrom::End(0)).map_err(io_err)?;
                if sp - (ev.pos + size) > end - here {
                    self.done = true;
                    return Err(typed(
                        "StartPositionError",
                        "start position is past the end of the file",
                        Some(sp),
                        None,
                        s(format!(
                            "at most {} (the file size)",
                            end - here + ev.pos + size
                        )),
                        i(sp),
                    ));
                }
                self.src
                    .seek(SeekFrom::Start(here + sp - (ev.pos + size)))
                    .map_err(io_err)?;
                self.skip_to = Some(sp);
            }
        }
        self.first = false;
        self.pos = match self.skip_to.take() {
            Some(sp) => sp,
            None => ev.pos + size,
        };
        Ok(())
    }

    fn read_payload(&mut self, buf: &mut [u8]) -> Result<usize, Fail> {
        let p = self.payload.as_mut().unwrap();
        let mut got = 0;
        while got < buf.len() {
            match p.reader.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                // a frame cut short ends the payload where its last whole block ends, as python-zstandard's
                // stream_reader does (no error there): the caller then finds it shorter than declared
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Err(e) => {
                    let f = payload_error(
                        p.payload_pos,
                        format!(
                            "compressed payload does not decompress: zstd decompress error: {}",
                            e
                        ),
                    );
                    return self.stop(f);
                }
            }
        }
        Ok(got)
    }

    /// Append up to ``n`` more payload bytes to ``out``, in steps of at most ``READ_STEP``; how many came.
    fn read_payload_to(&mut self, out: &mut Vec<u8>, n: usize) -> Result<usize, Fail> {
        let mut done = 0;
        while done < n {
            let step = (n - done).min(READ_STEP);
            let at = out.len();
            out.resize(at + step, 0);
            let got = self.read_payload(&mut out[at..])?;
            out.truncate(at + got);
            done += got;
            if got < step {
                break;
            }
        }
        Ok(done)
    }

    fn next_inner(&mut self) -> Result<Option<Event>, Fail> {
        let (inner, limit, ppos) = {
            let p = self.payload.as_ref().unwrap();
            (p.inner, p.limit, p.payload_pos)
        };
        let tp = || Some("TRANSACTION_PAYLOAD_EVENT".to_string());
        let mut head = [0u8; HEADER_LEN];
        let n = self.read_payload(&mut head)?;
        if n == 0 {
            if inner != limit {
                self.done = true;
                return self.stop(typed(
                    "CorruptEventError",
                    "payload shorter than its declared uncompressed size",
                    Some(ppos),
                    tp(),
                    s(format!("{} bytes", limit)),
                    s(format!("{} bytes", inner)),
                ));
            }
            return Ok(None);
        }
        if n < HEADER_LEN {
            return self.stop(typed(
                "CorruptEventError",
                format!(
                    "payload ends inside an event header (inner offset {})",
                    inner
                ),
                Some(ppos),
                tp(),
                s("19 bytes"),
                s(format!("{} bytes", n)),
            ));
        }
        let header = Header::parse(&head);
        let size = header.size as u64;
        let t = header.type_code;
        if size < HEADER_LEN as u64 || inner + size > limit {
            return self.stop(typed(
                "CorruptEventError",
                format!("impossible inner event length (inner offset {})", inner),
                Some(ppos),
                Some(self.type_name(t)),
                s(format!("19..{} bytes", limit as i128 - inner as i128)),
                i(size),
            ));
        }
        if size > self.max_event {
            return self.stop(typed(
                "EventTooLargeError",
                format!(
                    "inner event larger than the maximum event size (inner offset {})",
                    inner
                ),
                Some(ppos),
                Some(self.type_name(t)),
                s(format!("at most {} bytes", self.max_event)),
                i(size),
            ));
        }
        if let Some(largest) = largest_event(t, false) {
            if size > largest {
                return self.stop(typed(
                    "CorruptEventError",
                    format!(
                        "inner event larger than any event of its type (inner offset {})",
                        inner
                    ),
                    Some(ppos),
                    Some(self.type_name(t)),
                    s(format!("at most {} bytes", largest)),
                    i(size),
                ));
            }
        }
        if header.type_code == FORMAT_DESCRIPTION_EVENT
            || header.type_code == TRANSACTION_PAYLOAD_EVENT
        {
            return self.stop(typed(
                "CorruptEventError",
                format!(
                    "{} can not be nested in a payload (inner offset {})",
                    self.type_name(t),
                    inner
                ),
                Some(ppos),
                tp(),
                None,
                None,
            ));
        }
        // grown as the payload decompresses, never to the declared size up front: memory follows the bytes there
        let mut raw = Vec::with_capacity((size as usize).min(READ_STEP));
        raw.extend_from_slice(&head);
        let got = self.read_payload_to(&mut raw, size as usize - HEADER_LEN)?;
        if got < size as usize - HEADER_LEN {
            return self.stop(typed(
                "CorruptEventError",
                format!("payload ends inside an event (inner offset {})", inner),
                Some(ppos),
                Some(self.type_name(t)),
                s(format!("{} bytes", size)),
                s(format!("{}", HEADER_LEN + got)),
            ));
        }
        self.payload.as_mut().unwrap().inner += size;
        Ok(Some(Event {
            pos: inner,
            payload_pos: Some(ppos),
            header,
            body_end: size as usize,
            raw,
        }))
    }
}

/// Decompress and copy in steps of at most this many bytes (``READ_STEP`` of the Python reader).
const READ_STEP: usize = 1 << 20;

/// The largest event size of a type whose layout is fixed or small (``LARGEST_BODY`` of the Python reader):
/// ``Xid_event`` 8 body bytes, ``Intvar_event`` 9, ``Rand_event`` 16, GTID events well under 1 KiB.
fn largest_event(type_code: u8, checksum: bool) -> Option<u64> {
    let body = match type_code {
        16 => 8,
        5 => 9,
        13 => 16,
        33 | 34 | 42 | 162 => 1024,
        _ => return None,
    };
    Some(HEADER_LEN as u64 + body + if checksum { 4 } else { 0 })
}

fn payload_error(pos: u64, message: String) -> Fail {
    typed(
        "CorruptEventError",
        message,
        Some(pos),
        Some("TRANSACTION_PAYLOAD_EVENT".into()),
        None,
        None,
    )
}
