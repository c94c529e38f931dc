"""Builds small InnoDB tablespaces byte by byte from the on-disk format (fil0types.h, fsp0fsp.h, page0page.h,
rem0rec.h, lob0lob.h, buf0checksum.cc), independently of binlake.sdi, to exercise paths the real fixtures lack:
multi-level SDI B-trees, leaf chains, externally stored SDI, 4K pages, the innodb and none checksums."""

from __future__ import annotations

import itertools
import struct
import zlib
from dataclasses import dataclass

FIL_PAGE_SDI = 17853
FIL_PAGE_SDI_BLOB = 18
FIL_PAGE_TYPE_FSP_HDR = 8
FSP_FLAGS = 0x4021  # POST_ANTELOPE | ATOMIC_BLOBS | SDI, PAGE_SSIZE 0 (16K)
SDI_OFFSET = {16384: 10505, 4096: 1673}  # 150 + XDES_SIZE * (page_size / extent pages) + 115, worked by hand
PAGE_SSIZE = {16384: 0, 4096: 3}


def crc32c_bitwise(data: bytes) -> int:
    """CRC-32C, one bit at a time (the RFC 3720 definition)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def innodb_fold(data: bytes) -> int:
    """ut_fold_binary: fold = ((((fold ^ b ^ MASK2) << 8) + fold) ^ MASK) + b, in 64 bits."""
    fold = 0
    for b in data:
        fold = ((((((fold ^ b ^ 1653893711) << 8) & 0xFFFFFFFFFFFFFFFF) + fold) & 0xFFFFFFFFFFFFFFFF) ^ 1463735687) + b
        fold &= 0xFFFFFFFFFFFFFFFF
    return fold


def finish(
    page: bytearray, page_no: int, page_type: int, space_id: int, algo: str, lsn: int = 0x1234_5678_9ABC
) -> bytes:
    size = len(page)
    struct.pack_into(">I", page, 4, page_no)
    struct.pack_into(">H", page, 24, page_type)
    struct.pack_into(">I", page, 34, space_id)
    struct.pack_into(">Q", page, 16, lsn)
    struct.pack_into(">I", page, size - 4, lsn & 0xFFFFFFFF)
    if algo == "crc32":
        c = crc32c_bitwise(bytes(page[4:26])) ^ crc32c_bitwise(bytes(page[38 : size - 8]))
        struct.pack_into(">I", page, 0, c)
        struct.pack_into(">I", page, size - 8, c)
    elif algo == "innodb":
        new = (innodb_fold(bytes(page[4:26])) + innodb_fold(bytes(page[38 : size - 8]))) & 0xFFFFFFFF
        struct.pack_into(">I", page, 0, new)
        struct.pack_into(">I", page, size - 8, innodb_fold(bytes(page[:26])) & 0xFFFFFFFF)
    else:
        struct.pack_into(">I", page, 0, 0xDEADBEEF)
        struct.pack_into(">I", page, size - 8, 0xDEADBEEF)
    return bytes(page)


@dataclass
class Rec:
    key: tuple[int, int]  # (type, id)
    payload: bytes = b""  # leaf: the zlib data stored in the record (or the 20-byte ref if external)
    uncomp_len: int = 0
    comp_len: int = 0
    external: bool = False
    child: int = 0  # node pointer: child page
    deleted: bool = False


def index_page(size: int, level: int, recs: list[Rec], prev: int = 0xFFFFFFFF, nxt: int = 0xFFFFFFFF) -> bytearray:
    page = bytearray(size)
    struct.pack_into(">II", page, 8, prev, nxt)
    # infimum (heap 0, status 2) and supremum (heap 1, status 3): 5 header bytes, then the 8-byte name
    page[94:99] = bytes([0x01, 0x00, 0x02, 0, 0])
    page[99:107] = b"infimum\x00"
    page[107:112] = bytes([0x01, 0x00, 0x0B, 0, 0])
    page[112:120] = b"supremum"
    pos, origins = 120, []
    for heap_no, r in enumerate(recs, start=2):
        if level:
            fields = struct.pack(">IQI", r.key[0], r.key[1], r.child)
            lens = b""
            status = 1
        else:
            fields = struct.pack(">IQ", *r.key) + bytes(6) + bytes(7) + struct.pack(">II", r.uncomp_len, r.comp_len)
            fields += r.payload
            n = len(r.payload)
            if n < 128 and not r.external:
                lens = bytes([n])
            else:  # two bytes, stored backwards: low byte first in memory, high byte (0x80|ext 0x40) next
                lens = bytes([n & 0xFF, 0x80 | (0x40 if r.external else 0) | (n >> 8)])
            status = 0
        info = 0x20 if r.deleted else 0
        header = bytes([info]) + struct.pack(">H", heap_no << 3 | status) + b"\x00\x00"
        page[pos : pos + len(lens) + 5] = lens + header
        origin = pos + len(lens) + 5
        page[origin : origin + len(fields)] = fields
        origins.append(origin)
        pos = origin + len(fields)
    chain = [99] + origins + [112]
    for a, b in itertools.pairwise(chain):
        struct.pack_into(">H", page, a - 2, (b - a) & 0xFFFF)
    struct.pack_into(">HHH", page, 38, 2, pos, 0x8000 | (2 + len(recs)))
    struct.pack_into(">H", page, 38 + 16, sum(1 for r in recs if not r.deleted))
    struct.pack_into(">H", page, 38 + 26, level)
    struct.pack_into(">Q", page, 38 + 28, 0xFFFFFFFF_FFFFFFFE)
    return page


def sdi_leaf_record(sdi_type: int, sdi_id: int, json_bytes: bytes, ext_page: int = 0, deleted: bool = False) -> Rec:
    comp = zlib.compress(json_bytes)
    if ext_page:
        ref = struct.pack(">IIIQ", 0, ext_page, 38, len(comp))
        return Rec((sdi_type, sdi_id), ref, len(json_bytes), len(comp), external=True, deleted=deleted)
    return Rec((sdi_type, sdi_id), comp, len(json_bytes), len(comp), deleted=deleted)


def blob_pages(size: int, data: bytes, first_page: int, chunk: int) -> dict[int, tuple[bytearray, int]]:
    out: dict[int, tuple[bytearray, int]] = {}
    parts = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    for k, part in enumerate(parts):
        page = bytearray(size)
        nxt = first_page + k + 1 if k + 1 < len(parts) else 0xFFFFFFFF
        struct.pack_into(">II", page, 38, len(part), nxt)
        page[46 : 46 + len(part)] = part
        out[first_page + k] = (page, FIL_PAGE_SDI_BLOB)
    return out


def tablespace(
    size: int,
    n_pages: int,
    sdi_root: int,
    pages: dict[int, tuple[bytearray, int]],
    algo: str = "crc32",
    space_id: int = 77,
    flags: int | None = None,
) -> bytes:
    """Page 0 with the FSP header and SDI root, the given pages, and all-zero (empty) pages elsewhere."""
    flags = FSP_FLAGS | (PAGE_SSIZE[size] << 6) if flags is None else flags
    p0 = bytearray(size)
    struct.pack_into(">II", p0, 8, 80040, 1)  # FIL_PAGE_SRV_VERSION, FIL_PAGE_SPACE_VERSION
    struct.pack_into(">IIII", p0, 38, space_id, 0, n_pages, 64)
    struct.pack_into(">I", p0, 38 + 16, flags)
    struct.pack_into(">II", p0, SDI_OFFSET[size], 1, sdi_root)
    out = [finish(p0, 0, FIL_PAGE_TYPE_FSP_HDR, space_id, algo)]
    for no in range(1, n_pages):
        if no in pages:
            page, ptype = pages[no]
            out.append(finish(page, no, ptype, space_id, algo))
        else:
            out.append(bytes(size))
    return b"".join(out)
