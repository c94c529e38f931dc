"""InnoDB page checksums: crc32c (also in the legacy big-endian variant), innodb (``ut_fold_binary``) and none.

Mirrors ``buf_calc_page_crc32``, ``buf_calc_page_new_checksum``, ``buf_calc_page_old_checksum`` and
``BlockReporter::is_corrupted`` (``storage/innobase/buf/buf0checksum.cc``) for uncompressed pages: a page is
accepted when it is all zeroes or when any algorithm matches, as MySQL does with ``innodb_checksum_algorithm=crc32``.
"""

from __future__ import annotations

import struct

FIL_PAGE_SPACE_OR_CHKSUM = 0
FIL_PAGE_OFFSET = 4
FIL_PAGE_LSN = 16
FIL_PAGE_FILE_FLUSH_LSN = 26
FIL_PAGE_DATA = 38
FIL_PAGE_END_LSN_OLD_CHKSUM = 8
BUF_NO_CHECKSUM_MAGIC = 0xDEADBEEF
UT_HASH_RANDOM_MASK = 1463735687
UT_HASH_RANDOM_MASK2 = 1653893711
_U64 = (1 << 64) - 1
_BE32 = struct.Struct(">I")


def _crc32c_table() -> tuple[int, ...]:
    poly = 0x82F63B78  # CRC-32C (Castagnoli), reflected
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_TABLE = _crc32c_table()


def crc32c_update(crc: int, data: bytes | memoryview) -> int:
    """Continue a CRC-32C over ``data`` (``crc`` is the inverted running register; start with 0xFFFFFFFF)."""
    table = _TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C of ``data`` (``ut_crc32``)."""
    return crc32c_update(0xFFFFFFFF, data) ^ 0xFFFFFFFF


def _legacy_big_endian_bytes(page: bytes, start: int, end: int) -> bytes:
    """The byte stream ``ut_crc32_legacy_big_endian`` effectively hashes: every 8-byte group aligned to the page
    start is byte-swapped (it read them as native integers, then swapped); the unaligned head and tail are not."""
    head_end = min(end, (start + 7) // 8 * 8)
    body_end = head_end + (end - head_end) // 8 * 8
    parts = [page[start:head_end]]
    parts.extend(page[i : i + 8][::-1] for i in range(head_end, body_end, 8))
    parts.append(page[body_end:end])
    return b"".join(parts)


def page_crc32(page: bytes, legacy_big_endian: bool = False) -> int:
    """``buf_calc_page_crc32``: crc32c of [4, 26) xor crc32c of [38, size - 8)."""
    size = len(page)
    r1 = (FIL_PAGE_OFFSET, FIL_PAGE_FILE_FLUSH_LSN)
    r2 = (FIL_PAGE_DATA, size - FIL_PAGE_END_LSN_OLD_CHKSUM)
    if legacy_big_endian:
        return crc32c(_legacy_big_endian_bytes(page, *r1)) ^ crc32c(_legacy_big_endian_bytes(page, *r2))
    return crc32c(page[r1[0] : r1[1]]) ^ crc32c(page[r2[0] : r2[1]])


def fold_binary(data: bytes) -> int:
    """``ut_fold_binary``: fold every byte with ``ut_fold_ulint_pair`` in 64-bit arithmetic."""
    fold = 0
    m1, m2 = UT_HASH_RANDOM_MASK, UT_HASH_RANDOM_MASK2
    for b in data:
        fold = (((((fold ^ b ^ m2) << 8) + fold) & _U64) ^ m1) + b & _U64
    return fold


def page_new_checksum(page: bytes) -> int:
    """``buf_calc_page_new_checksum`` (algorithm ``innodb``, stored in the header)."""
    size = len(page)
    return (
        fold_binary(page[FIL_PAGE_OFFSET:FIL_PAGE_FILE_FLUSH_LSN])
        + fold_binary(page[FIL_PAGE_DATA : size - FIL_PAGE_END_LSN_OLD_CHKSUM])
    ) & 0xFFFFFFFF


def page_old_checksum(page: bytes) -> int:
    """``buf_calc_page_old_checksum`` (algorithm ``innodb``, stored in the trailer)."""
    return fold_binary(page[:FIL_PAGE_FILE_FLUSH_LSN]) & 0xFFFFFFFF


def page_checksum_algorithm(page: bytes) -> str | None:
    """Which algorithm the stored checksums of an uncompressed page match: "crc32", "crc32-legacy-big-endian",
    "none", "innodb", "empty" (an all-zero page), or None when the page is corrupt.

    Mirrors ``BlockReporter::is_corrupted`` including its check that the LSN's low 32 bits in the header and the
    trailer agree.
    """
    size = len(page)
    if page[FIL_PAGE_LSN + 4 : FIL_PAGE_LSN + 8] != page[size - 4 : size]:
        return None
    field1 = _BE32.unpack_from(page, FIL_PAGE_SPACE_OR_CHKSUM)[0]
    field2 = _BE32.unpack_from(page, size - FIL_PAGE_END_LSN_OLD_CHKSUM)[0]
    if field1 == 0 and field2 == 0 and page[FIL_PAGE_LSN : FIL_PAGE_LSN + 8] == bytes(8):
        body = page[:FIL_PAGE_FILE_FLUSH_LSN] + page[FIL_PAGE_FILE_FLUSH_LSN + 8 :]
        # FIL_PAGE_FILE_FLUSH_LSN (bytes 26..33) may be set on empty pages
        return "empty" if not any(body) else None
    if field1 == field2:
        if field1 == page_crc32(page):
            return "crc32"
        if field1 == BUF_NO_CHECKSUM_MAGIC:
            return "none"
    lsn_high = _BE32.unpack_from(page, FIL_PAGE_LSN)[0]  # very old InnoDB stored the LSN in the trailer
    if (field2 == lsn_high or field2 == page_old_checksum(page)) and (field1 == 0 or field1 == page_new_checksum(page)):
        return "innodb"
    if field1 == field2 and field1 == page_crc32(page, legacy_big_endian=True):
        return "crc32-legacy-big-endian"
    return None
