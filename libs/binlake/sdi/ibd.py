"""SDI records straight from an InnoDB tablespace (``.ibd``), as ``ibd2sdi`` reads them; pure functions of bytes.

Layout, by MySQL source: page 0's FSP header (``fsp0fsp.h``: ``FSP_SPACE_FLAGS``, the SDI version and root page
number after the XDES array and the encryption info, ``fsp_header_get_sdi_offset``); the SDI index, a B-tree of
``FIL_PAGE_SDI`` pages (``page0page.h``) whose records are in the compact format (``rem0rec.h``) with the fields
(type u32, id u64, DB_TRX_ID, DB_ROLL_PTR, uncompressed_len u32, compressed_len u32, data BLOB); data too long for
the page continues in a chain of ``FIL_PAGE_SDI_BLOB`` pages (``lob0lob.h`` LOB_HDR_PART_LEN/NEXT_PAGE_NO) and is
a zlib stream (``dict0sdi-decompress.h``). ``ibd2sdi.cc`` is the reference reader this module mirrors.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from binlake.sdi.checksum import page_checksum_algorithm
from binlake.sdi.errors import ChecksumError, SdiFormatError, TablespaceError
from binlake.sdi.model import SdiDocument, parse_sdi

# --- fil0types.h: file page header and trailer
FIL_PAGE_SPACE_OR_CHKSUM = 0
FIL_PAGE_OFFSET = 4
FIL_PAGE_PREV = 8  # on page 0 of an 8.0 tablespace: FIL_PAGE_SRV_VERSION
FIL_PAGE_NEXT = 12  # on page 0: FIL_PAGE_SPACE_VERSION
FIL_PAGE_TYPE = 24
FIL_PAGE_SPACE_ID = 34
FIL_PAGE_DATA = 38
FIL_PAGE_DATA_END = 8
FIL_NULL = 0xFFFFFFFF
FIL_PAGE_TYPE_FSP_HDR = 8
FIL_PAGE_SDI = 17853
FIL_PAGE_SDI_BLOB = 18
FIL_PAGE_SDI_ZBLOB = 19

# --- fsp0fsp.h / fsp0types.h: FSP header and flags
FSP_HEADER_OFFSET = FIL_PAGE_DATA
FSP_SPACE_ID = 0
FSP_SIZE = 8
FSP_SPACE_FLAGS = 16
FSP_HEADER_SIZE = 112
XDES_ARR_OFFSET = FSP_HEADER_OFFSET + FSP_HEADER_SIZE
XDES_BITMAP = 24
XDES_BITS_PER_PAGE = 2
ENCRYPTION_INFO_MAX_SIZE = 115  # Encryption::INFO_MAX_SIZE: magic 3 + key id 4 + key/iv 64 + uuid 36 + crc 4 + 4
FSP_SDI_HEADER_LEN = 8
SDI_VERSION = 1
FSP_FLAGS_POS_ZIP_SSIZE = 1
FSP_FLAGS_POS_PAGE_SSIZE = 6
FSP_FLAGS_POS_ENCRYPTION = 13
FSP_FLAGS_POS_SDI = 14
FSP_FLAGS_POS_UNUSED = 15
FSP_FLAGS_MASK_ZIP_SSIZE = 0xF << FSP_FLAGS_POS_ZIP_SSIZE
FSP_FLAGS_MASK_PAGE_SSIZE = 0xF << FSP_FLAGS_POS_PAGE_SSIZE
UNIV_ZIP_SIZE_MIN = 1024
UNIV_PAGE_SIZE_ORIG = 16384

# --- page0page.h: index page header
PAGE_HEADER = FIL_PAGE_DATA
PAGE_N_HEAP = 4
PAGE_N_RECS = 16
PAGE_LEVEL = 26
PAGE_INDEX_ID = 28
PAGE_NEW_INFIMUM = 99
PAGE_NEW_SUPREMUM = 112
PAGE_HEAP_NO_COMPACT_FLAG = 0x8000

# --- rem0rec.h: compact record header (bytes before the record origin)
REC_N_NEW_EXTRA_BYTES = 5
REC_NEW_INFO_BITS = 5
REC_INFO_DELETED_FLAG = 0x20
REC_OFF_TYPE = 3
REC_NEXT = 2
REC_STATUS_ORDINARY = 0
REC_STATUS_NODE_PTR = 1
REC_STATUS_INFIMUM = 2
REC_STATUS_SUPREMUM = 3

# --- the SDI index record (ibd2sdi.cc REC_OFF_DATA_*)
REC_OFF_DATA_TYPE = 0
REC_OFF_DATA_ID = 4
REC_OFF_DATA_UNCOMP_LEN = 25
REC_OFF_DATA_COMP_LEN = 29
REC_OFF_DATA_VARCHAR = 33
REC_OFF_CHILD_PAGE_NO = 12  # node pointer: type, id, then the child page number
SDI_REC_SIZE = 1 + REC_N_NEW_EXTRA_BYTES + 4 + 8 + 7 + 6
SDI_BLOB_ALLOWED = 4  # pages 0..3 are FSP header, IBUF bitmap, INODE, SDI root

# --- lob0lob.h: externally stored field reference and old-style BLOB page header
BTR_EXTERN_FIELD_REF_SIZE = 20
BTR_EXTERN_PAGE_NO = 4
BTR_EXTERN_LEN = 12
LOB_HDR_PART_LEN = 0
LOB_HDR_NEXT_PAGE_NO = 4
LOB_HDR_SIZE = 8
# Largest uncompressed SDI record accepted by default (read_ibd_sdi(max_sdi_size=...) changes it): the record's
# length field is 32 bits, but the SDI of a table at MySQL's limits (4096 columns, 8192 partitions) is a few MB;
# a larger one is a hostile or corrupt file, and its JSON would take many times its size to parse.
MAX_SDI_SIZE = 64 << 20

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


@dataclass(frozen=True, slots=True)
class TablespaceInfo:
    """What page 0 says about a tablespace."""

    space_id: int
    flags: int
    page_size: int
    n_pages: int
    server_version: int  # FIL_PAGE_SRV_VERSION, e.g. 80040
    space_version: int  # FIL_PAGE_SPACE_VERSION
    sdi_version: int
    sdi_root: int


@dataclass(frozen=True, slots=True)
class SdiRecord:
    """One record of the tablespace's SDI index: key (type, id) and the inflated JSON bytes exactly as stored."""

    sdi_type: int
    sdi_id: int
    data: bytes
    uncompressed_len: int
    compressed_len: int
    page_no: int
    external: bool = False
    source: str = field(default="", compare=False)

    def text(self) -> str:
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SdiFormatError(
                self.source, f"sdi[type={self.sdi_type},id={self.sdi_id}]", f"SDI is not UTF-8 at byte {exc.start}"
            ) from None

    def document(self) -> SdiDocument:
        return parse_sdi(self.text(), self.source)


def page_size_from_flags(flags: int) -> int:
    """Logical page size from ``FSP_SPACE_FLAGS`` (``page_size_t(flags)``); 0 when the field is invalid."""
    ssize = (flags & FSP_FLAGS_MASK_PAGE_SSIZE) >> FSP_FLAGS_POS_PAGE_SSIZE
    if ssize == 0:
        return UNIV_PAGE_SIZE_ORIG
    size = (UNIV_ZIP_SIZE_MIN >> 1) << ssize
    return size if 4096 <= size <= 65536 else 0


def sdi_offset(page_size: int) -> int:
    """``fsp_header_get_sdi_offset``: where page 0 stores the SDI version and root page number."""
    extent_pages = (1 << 20) // page_size if page_size <= 16384 else 64  # FSP_EXTENT_SIZE
    xdes_size = XDES_BITMAP + (extent_pages * XDES_BITS_PER_PAGE + 7) // 8
    xdes_arr_size = page_size // extent_pages
    return XDES_ARR_OFFSET + xdes_size * xdes_arr_size + ENCRYPTION_INFO_MAX_SIZE


class _Pages:
    """Bounded, checksum-verified access to the pages of one tablespace image."""

    def __init__(
        self, buf: memoryview, page_size: int, space_id: int, source: str, verify: bool, max_sdi_size: int = 0
    ) -> None:
        self.buf, self.page_size, self.space_id = buf, page_size, space_id
        self.source, self.verify = source, verify
        self.max_sdi_size = max_sdi_size or MAX_SDI_SIZE
        self.n_pages = len(buf) // page_size

    def error(self, page_no: int | None, message: str) -> TablespaceError:
        return TablespaceError(self.source, page_no, message)

    def get(self, page_no: int, expected_type: int) -> bytes:
        if not 0 <= page_no < self.n_pages:
            raise self.error(
                page_no,
                f"page is beyond the end of the file ({self.n_pages} whole pages of "
                f"{self.page_size} bytes): the tablespace is truncated or the pointer to it "
                f"is corrupt",
            )
        page = bytes(self.buf[page_no * self.page_size : (page_no + 1) * self.page_size])
        if self.verify and page_checksum_algorithm(page) is None:
            raise ChecksumError(
                self.source,
                page_no,
                "checksum mismatch: the stored checksums match none of crc32, innodb, none (the page is corrupt)",
            )
        found_no = _U32.unpack_from(page, FIL_PAGE_OFFSET)[0]
        if found_no != page_no:
            raise self.error(page_no, f"expected page number {page_no} in the page header, found {found_no}")
        page_type = _U16.unpack_from(page, FIL_PAGE_TYPE)[0]
        if page_type != expected_type:
            raise self.error(page_no, f"expected page type {expected_type}, found {page_type}")
        space_id = _U32.unpack_from(page, FIL_PAGE_SPACE_ID)[0]
        if space_id != self.space_id:
            raise self.error(page_no, f"expected space id {self.space_id}, found {space_id}")
        return page


def read_tablespace_info(buf: bytes | memoryview, source: str = "", verify_checksums: bool = True) -> TablespaceInfo:
    """Decode page 0 (FSP header) and locate the SDI root; raises :class:`TablespaceError` when the file is not a
    readable MySQL 8.0+ tablespace."""
    with memoryview(buf) as view:
        return _open(view, source, verify_checksums)[0]


def _open(buf: memoryview, source: str, verify: bool) -> tuple[TablespaceInfo, _Pages]:
    if len(buf) < FSP_HEADER_OFFSET + FSP_HEADER_SIZE:
        raise TablespaceError(source, 0, f"file too short for a tablespace header ({len(buf)} bytes)")
    flags = _U32.unpack_from(buf, FSP_HEADER_OFFSET + FSP_SPACE_FLAGS)[0]
    space_id = _U32.unpack_from(buf, FSP_HEADER_OFFSET + FSP_SPACE_ID)[0]
    page_size = page_size_from_flags(flags)
    if flags >> FSP_FLAGS_POS_UNUSED or page_size == 0:
        raise TablespaceError(
            source, 0, f"invalid FSP_SPACE_FLAGS 0x{flags:x}: not an InnoDB tablespace or page 0 is corrupt"
        )
    if flags & FSP_FLAGS_MASK_ZIP_SSIZE:
        raise TablespaceError(
            source, 0, "ROW_FORMAT=COMPRESSED (KEY_BLOCK_SIZE) tablespaces are not supported; use ibd2sdi for this file"
        )
    if flags & (1 << FSP_FLAGS_POS_ENCRYPTION):
        raise TablespaceError(
            source, 0, "the tablespace is encrypted; its SDI pages can not be read without the keyring"
        )
    if not flags & (1 << FSP_FLAGS_POS_SDI):
        raise TablespaceError(
            source,
            0,
            f"FSP_SPACE_FLAGS 0x{flags:x} has no SDI flag: not a MySQL 8.0+ tablespace "
            f"(MySQL 5.7 and MariaDB files carry no SDI)",
        )
    pages = _Pages(buf, page_size, space_id, source, verify)
    page0 = pages.get(0, FIL_PAGE_TYPE_FSP_HDR)
    off = sdi_offset(page_size)
    sdi_version, sdi_root = struct.unpack_from(">II", page0, off)
    if sdi_version != SDI_VERSION:
        raise pages.error(0, f"expected SDI version {SDI_VERSION} at offset {off}, found {sdi_version}")
    if sdi_root < SDI_BLOB_ALLOWED - 1:
        raise pages.error(0, f"SDI root page number {sdi_root} is outside the SDI index's range (3 and up)")
    info = TablespaceInfo(
        space_id=space_id,
        flags=flags,
        page_size=page_size,
        n_pages=pages.n_pages,
        server_version=_U32.unpack_from(page0, FIL_PAGE_PREV)[0],
        space_version=_U32.unpack_from(page0, FIL_PAGE_NEXT)[0],
        sdi_version=sdi_version,
        sdi_root=sdi_root,
    )
    return info, pages


def _user_records(pages: _Pages, page_no: int, page: bytes) -> list[tuple[int, int]]:
    """(origin offset, status) of the non-deleted user records of an index page, in key order."""
    size = pages.page_size
    if not _U16.unpack_from(page, PAGE_HEADER + PAGE_N_HEAP)[0] & PAGE_HEAP_NO_COMPACT_FLAG:
        raise pages.error(page_no, "expected a compact-format index page, found the redundant format")
    if page[PAGE_NEW_INFIMUM : PAGE_NEW_INFIMUM + 8] != b"infimum\x00":
        raise pages.error(page_no, f"expected the infimum record at offset {PAGE_NEW_INFIMUM}")
    out: list[tuple[int, int]] = []
    off = PAGE_NEW_INFIMUM
    for _ in range(size // SDI_REC_SIZE + 2):
        rel = _U16.unpack_from(page, off - REC_NEXT)[0]
        nxt = (off + rel) & (size - 1)
        if rel == 0 or not PAGE_NEW_SUPREMUM <= nxt < size - FIL_PAGE_DATA_END - REC_OFF_DATA_VARCHAR:
            raise pages.error(
                page_no,
                f"record at offset {off}: next-record offset {rel} leads to {nxt}, outside the page's record heap",
            )
        status = page[nxt - REC_OFF_TYPE] & 0x7
        if status == REC_STATUS_SUPREMUM:
            if nxt != PAGE_NEW_SUPREMUM:
                raise pages.error(page_no, f"expected the supremum at offset {PAGE_NEW_SUPREMUM}, found one at {nxt}")
            return out
        if status not in (REC_STATUS_ORDINARY, REC_STATUS_NODE_PTR):
            raise pages.error(page_no, f"record at offset {nxt}: unexpected record status {status}")
        if not page[nxt - REC_NEW_INFO_BITS] & REC_INFO_DELETED_FLAG:
            out.append((nxt, status))
        off = nxt
    raise pages.error(page_no, "record list does not reach the supremum (a cycle of next-record offsets)")


def _leftmost_leaf(pages: _Pages, root: int) -> tuple[int, bytes] | None:
    """Descend from the root along the leftmost node pointers (``reach_to_leftmost_leaf_level``)."""
    page_no, page = root, pages.get(root, FIL_PAGE_SDI)
    if _U16.unpack_from(page, PAGE_HEADER + PAGE_N_RECS)[0] == 0:
        return None
    level = _U16.unpack_from(page, PAGE_HEADER + PAGE_LEVEL)[0]
    while level > 0:
        recs = _user_records(pages, page_no, page)
        if not recs or recs[0][1] != REC_STATUS_NODE_PTR:
            raise pages.error(page_no, f"expected a node-pointer record on a level-{level} SDI page")
        child = _U32.unpack_from(page, recs[0][0] + REC_OFF_CHILD_PAGE_NO)[0]
        if child < SDI_BLOB_ALLOWED:
            raise pages.error(page_no, f"node pointer to page {child}, which can not be an SDI page")
        page_no, page = child, pages.get(child, FIL_PAGE_SDI)
        child_level = _U16.unpack_from(page, PAGE_HEADER + PAGE_LEVEL)[0]
        if child_level != level - 1:
            raise pages.error(page_no, f"expected B-tree level {level - 1}, found {child_level}")
        level = child_level
    return page_no, page


def _external(pages: _Pages, page_no: int, ref: bytes) -> bytes:
    """Data of an externally stored SDI field: the chain of FIL_PAGE_SDI_BLOB pages (``copy_uncompressed_blob``)."""
    first = _U32.unpack_from(ref, BTR_EXTERN_PAGE_NO)[0]
    length = _U32.unpack_from(ref, BTR_EXTERN_LEN + 4)[0]
    parts: list[bytes] = []
    got, blob_no, seen = 0, first, set()
    while blob_no != FIL_NULL:
        if blob_no < SDI_BLOB_ALLOWED or blob_no in seen:
            raise pages.error(page_no, f"SDI BLOB chain points to page {blob_no} (a cycle or a reserved page)")
        seen.add(blob_no)
        blob = pages.get(blob_no, FIL_PAGE_SDI_BLOB)
        part_len = _U32.unpack_from(blob, FIL_PAGE_DATA + LOB_HDR_PART_LEN)[0]
        start = FIL_PAGE_DATA + LOB_HDR_SIZE
        if start + part_len > pages.page_size - FIL_PAGE_DATA_END or got + part_len > length:
            raise pages.error(
                blob_no, f"SDI BLOB part of {part_len} bytes does not fit the page or the field length {length}"
            )
        parts.append(blob[start : start + part_len])
        got += part_len
        blob_no = _U32.unpack_from(blob, FIL_PAGE_DATA + LOB_HDR_NEXT_PAGE_NO)[0]
    if got != length:
        raise pages.error(
            page_no, f"externally stored SDI: expected {length} bytes, the BLOB chain from page {first} holds {got}"
        )
    return b"".join(parts)


def _sdi_record(pages: _Pages, page_no: int, page: bytes, rec: int) -> SdiRecord:
    """``ibd2sdi::parse_fields_in_rec``, then zlib inflate."""
    sdi_type = _U32.unpack_from(page, rec + REC_OFF_DATA_TYPE)[0]
    sdi_id = _U64.unpack_from(page, rec + REC_OFF_DATA_ID)[0]
    uncomp_len = _U32.unpack_from(page, rec + REC_OFF_DATA_UNCOMP_LEN)[0]
    comp_len = _U32.unpack_from(page, rec + REC_OFF_DATA_COMP_LEN)[0]
    len1 = page[rec - REC_N_NEW_EXTRA_BYTES - 1]
    external = False
    if len1 & 0x80:  # two length bytes (rec_init_offsets_comp_ordinary, DATA_BIG_COL)
        local_len = ((len1 & 0x3F) << 8) | page[rec - REC_N_NEW_EXTRA_BYTES - 2]
        external = bool(len1 & 0x40)
    else:
        local_len = len1
    start = rec + REC_OFF_DATA_VARCHAR
    if start + local_len > pages.page_size - FIL_PAGE_DATA_END:
        raise pages.error(page_no, f"SDI record at offset {rec}: data of {local_len} bytes runs past the page end")
    local = page[start : start + local_len]
    if external:
        if local_len < BTR_EXTERN_FIELD_REF_SIZE:
            raise pages.error(
                page_no,
                f"SDI record at offset {rec}: external field of {local_len} bytes is shorter than a BLOB reference",
            )
        ref = local[-BTR_EXTERN_FIELD_REF_SIZE:]
        compressed = local[:-BTR_EXTERN_FIELD_REF_SIZE] + _external(pages, page_no, ref)
    else:
        compressed = local
    where = f"SDI record (type {sdi_type}, id {sdi_id})"
    if len(compressed) != comp_len:
        raise pages.error(page_no, f"{where}: expected {comp_len} compressed bytes, found {len(compressed)}")
    if uncomp_len > pages.max_sdi_size:
        raise pages.error(
            page_no,
            f"{where}: declared uncompressed length {uncomp_len} is above the maximum SDI size {pages.max_sdi_size}",
        )
    inflater = zlib.decompressobj()
    try:  # never more than the declared length plus one byte (to see a stream that inflates past it)
        data = inflater.decompress(compressed, uncomp_len + 1)
    except zlib.error as exc:
        raise pages.error(page_no, f"{where}: zlib inflate failed ({exc})") from None
    if len(data) > uncomp_len:
        raise pages.error(page_no, f"{where}: expected {uncomp_len} bytes after inflate, found more")
    if not inflater.eof:
        raise pages.error(page_no, f"{where}: zlib inflate failed (the compressed stream is incomplete)")
    if len(data) != uncomp_len:
        raise pages.error(page_no, f"{where}: expected {uncomp_len} bytes after inflate, found {len(data)}")
    return SdiRecord(sdi_type, sdi_id, data, uncomp_len, comp_len, page_no, external, pages.source)


def read_ibd_sdi(
    buf: bytes | memoryview, source: str = "", verify_checksums: bool = True, max_sdi_size: int = 0
) -> tuple[TablespaceInfo, list[SdiRecord]]:
    """All SDI records of a tablespace image, in SDI index order (type, id), as ``ibd2sdi`` lists them.

    A record declaring more than ``max_sdi_size`` (default MAX_SDI_SIZE) uncompressed bytes is an error; each
    record is inflated to at most its declared length."""
    with memoryview(buf) as view:  # released on exit, so a caller's mmap can close even after an error
        return _read_sdi(view, source, verify_checksums, max_sdi_size)


def _read_sdi(
    view: memoryview, source: str, verify: bool, max_sdi_size: int = 0
) -> tuple[TablespaceInfo, list[SdiRecord]]:
    info, pages = _open(view, source, verify)
    pages.max_sdi_size = max_sdi_size or MAX_SDI_SIZE
    leaf = _leftmost_leaf(pages, info.sdi_root)
    records: list[SdiRecord] = []
    seen: set[int] = set()
    while leaf is not None:
        page_no, page = leaf
        seen.add(page_no)
        if _U16.unpack_from(page, PAGE_HEADER + PAGE_LEVEL)[0] != 0:
            raise pages.error(page_no, "expected a leaf page (level 0) in the SDI leaf chain")
        for rec, status in _user_records(pages, page_no, page):
            if status != REC_STATUS_ORDINARY:
                raise pages.error(page_no, f"expected an ordinary record on an SDI leaf page, found status {status}")
            records.append(_sdi_record(pages, page_no, page, rec))
        nxt = _U32.unpack_from(page, FIL_PAGE_NEXT)[0]
        if nxt == FIL_NULL:
            break
        if nxt in seen:
            raise pages.error(page_no, f"SDI leaf chain loops back to page {nxt}")
        leaf = nxt, pages.get(nxt, FIL_PAGE_SDI)
    return info, records
