"""SDI index shapes the real fixtures do not have, built byte by byte (tests/sdi/ibd_builder.py): a two-level
B-tree with a leaf chain, delete-marked records, SDI stored in BLOB pages, 4K pages, innodb/none checksums."""

from __future__ import annotations

import json
import struct
import zlib

import pytest

from binlake.sdi import ChecksumError, TablespaceError, read_ibd_sdi
from binlake.sdi.checksum import crc32c, page_checksum_algorithm
from tests.sdi import ibd_builder as B


def _doc(i: int, pad: int = 0) -> bytes:
    obj = {
        "mysqld_version_id": 80040,
        "dd_version": 80023,
        "sdi_version": 80019,
        "dd_object_type": "Tablespace",
        "dd_object": {
            "name": f"db/t{i}",
            "comment": "x" * pad,
            "options": "",
            "se_private_data": "",
            "engine": "InnoDB",
            "engine_attribute": "",
            "files": [],
        },
    }
    return json.dumps(obj, separators=(",", ":")).encode()


def _two_level(size: int, algo: str) -> tuple[bytes, list[tuple[int, int, bytes]]]:
    """Root (page 3, level 1) -> leaves 4 and 5; record (2, 30) is stored in BLOB pages 6, 7, 8."""
    docs = [(1, 10, _doc(10)), (1, 20, _doc(20)), (2, 30, _doc(30, pad=5000)), (2, 40, _doc(40))]
    big = zlib.compress(docs[2][2], level=0)  # stored, so it needs several BLOB pages
    leaf4 = B.index_page(
        size,
        0,
        [B.sdi_leaf_record(*docs[0]), B.sdi_leaf_record(1, 15, _doc(15), deleted=True), B.sdi_leaf_record(*docs[1])],
        nxt=5,
    )
    ext = B.Rec((2, 30), struct.pack(">IIIQ", 77, 6, 38, len(big)), len(docs[2][2]), len(big), external=True)
    leaf5 = B.index_page(size, 0, [ext, B.sdi_leaf_record(*docs[3])], prev=4)
    root = B.index_page(size, 1, [B.Rec((1, 10), child=4), B.Rec((2, 30), child=5)])
    pages = {3: (root, B.FIL_PAGE_SDI), 4: (leaf4, B.FIL_PAGE_SDI), 5: (leaf5, B.FIL_PAGE_SDI)}
    pages.update(B.blob_pages(size, big, 6, chunk=(len(big) + 2) // 3))
    return B.tablespace(size, 10, 3, pages, algo), docs


@pytest.mark.parametrize("size,algo", [(16384, "crc32"), (4096, "innodb"), (4096, "none")])
def test_two_level_tree_with_leaf_chain_and_external_sdi(size, algo):
    image, docs = _two_level(size, algo)
    assert {page_checksum_algorithm(image[i : i + size]) for i in range(0, len(image), size)} == {algo, "empty"}
    info, records = read_ibd_sdi(image, "synthetic.ibd")
    assert (info.page_size, info.space_id, info.sdi_root, info.server_version) == (size, 77, 3, 80040)
    assert [(r.sdi_type, r.sdi_id, r.data) for r in records] == docs  # the deleted (1, 15) is skipped
    assert [(r.page_no, r.external) for r in records] == [(4, False), (4, False), (5, True), (5, False)]


def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283 == B.crc32c_bitwise(b"123456789")


def _patch(image: bytes, size: int, page_no: int, offset: int, data: bytes, algo: str = "crc32") -> bytes:
    """Overwrite bytes of one page and recompute its checksum, so only the structure is wrong."""
    page = bytearray(image[page_no * size : (page_no + 1) * size])
    page[offset : offset + len(data)] = data
    ptype = struct.unpack_from(">H", page, 24)[0]
    fixed = B.finish(page, page_no, ptype, struct.unpack_from(">I", page, 34)[0], algo)
    return image[: page_no * size] + fixed + image[(page_no + 1) * size :]


@pytest.fixture(scope="module")
def image16k() -> bytes:
    return _two_level(16384, "crc32")[0]


@pytest.mark.parametrize(
    "page_no,offset,data,message",
    [
        (3, 38 + 26, b"\x00\x02", "expected B-tree level 1, found 0"),  # root claims level 2
        (4, 12, struct.pack(">I", 4), "leaf chain loops back to page 4"),
        (4, 12, struct.pack(">I", 60), "page is beyond the end of the file"),
        (6, 42, struct.pack(">I", 6), "BLOB chain points to page 6"),
        (6, 38, struct.pack(">I", 20000), "does not fit the page"),
        (4, 99, b"XXXXXXX", "expected the infimum record"),
        (4, 97, b"\x00\x00", "next-record offset 0"),
        (5, 24, struct.pack(">H", 17855), "expected page type 17853, found 17855"),
        (7, 24, struct.pack(">H", 10), "expected page type 18, found 10"),
        (4, 34, struct.pack(">I", 5), "expected space id 77, found 5"),
    ],
)
def test_structural_corruption_is_a_typed_error(image16k, page_no, offset, data, message):
    bad = _patch(image16k, 16384, page_no, offset, data)
    with pytest.raises(TablespaceError, match=message) as err:
        read_ibd_sdi(bad, "synthetic.ibd")
    assert str(err.value).startswith("synthetic.ibd: page ")


def test_external_length_mismatch(image16k):
    # the BLOB reference in record (2, 30) on page 5 claims one byte more than the chain holds
    rec_ref = image16k.index(struct.pack(">IIIQ", 77, 6, 38, 0)[:12], 5 * 16384)
    length = struct.unpack_from(">Q", image16k, rec_ref + 12)[0]
    bad = _patch(image16k, 16384, 5, rec_ref - 5 * 16384 + 12, struct.pack(">Q", length + 1))
    message = f"expected {length + 1} bytes, the BLOB chain from page 6 holds {length}"
    with pytest.raises(TablespaceError, match=message):
        read_ibd_sdi(bad)


def test_checksum_mismatch_names_the_page(image16k):
    bad = bytearray(image16k)
    bad[5 * 16384 - 200] ^= 0x01
    with pytest.raises(ChecksumError, match="page 4: checksum mismatch"):
        read_ibd_sdi(bytes(bad), "synthetic.ibd")
    # without verification the flipped byte lands in the record heap's free space: still readable
    assert len(read_ibd_sdi(bytes(bad), verify_checksums=False)[1]) == 4


def test_empty_sdi_index():
    root = B.index_page(4096, 0, [])
    image = B.tablespace(4096, 5, 3, {3: (root, B.FIL_PAGE_SDI)})
    assert read_ibd_sdi(image)[1] == []


def test_legacy_big_endian_crc32_pages_are_accepted():
    # ut_crc32_legacy_big_endian (5.7 on big-endian hosts) hashed each 8-byte group aligned to the page start in
    # reversed byte order; the unaligned head (bytes 4..7, 38..39) and the tail go through as they are.
    root = B.index_page(4096, 0, [B.sdi_leaf_record(1, 5, _doc(5))])
    image = bytearray(B.tablespace(4096, 5, 3, {3: (root, B.FIL_PAGE_SDI)}))
    page = image[3 * 4096 : 4 * 4096]

    def swapped(start: int, end: int) -> bytes:
        head = min(end, (start + 7) // 8 * 8)
        body = bytes(page[start:head])
        i = head
        while i + 8 <= end:
            body += bytes(page[i : i + 8])[::-1]
            i += 8
        return body + bytes(page[i:end])

    legacy = B.crc32c_bitwise(swapped(4, 26)) ^ B.crc32c_bitwise(swapped(38, 4096 - 8))
    struct.pack_into(">I", page, 0, legacy)
    struct.pack_into(">I", page, 4096 - 8, legacy)
    image[3 * 4096 : 4 * 4096] = page
    assert page_checksum_algorithm(bytes(page)) == "crc32-legacy-big-endian"
    assert [r.sdi_id for r in read_ibd_sdi(bytes(image))[1]] == [5]
