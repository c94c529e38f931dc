"""Damaged real tablespaces give typed errors naming the file, the page and what was expected."""

from __future__ import annotations

import random
import struct

import pytest

from binlake.sdi import ChecksumError, SdiError, TablespaceError, read_ibd_sdi
from binlake.sdi.readers import read_entries
from tests.sdi import ibd_builder as B
from tests.support import fixture_path

PAGE = 16384


@pytest.fixture(scope="module")
def actor() -> bytes:
    return fixture_path("sdi", "ibd", "innodb_ruby", "8.0_sakila_actor.ibd").read_bytes()


def _refinish(image: bytes, page_no: int, offset: int, data: bytes) -> bytes:
    page = bytearray(image[page_no * PAGE : (page_no + 1) * PAGE])
    page[offset : offset + len(data)] = data
    lsn = struct.unpack_from(">Q", page, 16)[0]
    fixed = B.finish(
        page, page_no, struct.unpack_from(">H", page, 24)[0], struct.unpack_from(">I", page, 34)[0], "crc32", lsn
    )
    return image[: page_no * PAGE] + fixed + image[(page_no + 1) * PAGE :]


@pytest.mark.parametrize("page_no,offset", [(0, 38 + 8), (0, 10505 + 7), (3, 200), (3, 16384 - 9)])
def test_flipped_byte_is_a_checksum_error_on_that_page(actor, page_no, offset):
    bad = bytearray(actor)
    bad[page_no * PAGE + offset] ^= 0x10
    with pytest.raises(ChecksumError) as err:
        read_ibd_sdi(bytes(bad), "actor.ibd")
    assert err.value.page_no == page_no
    assert str(err.value).startswith(f"actor.ibd: page {page_no}: checksum mismatch")


def test_lsn_mismatch_between_header_and_trailer(actor):
    bad = bytearray(actor)
    bad[3 * PAGE + PAGE - 1] ^= 0x01  # low byte of the trailer's LSN copy
    with pytest.raises(ChecksumError, match="page 3"):
        read_ibd_sdi(bytes(bad))


@pytest.mark.parametrize(
    "length,message",
    [
        (0, "file too short"),
        (100, "file too short"),
        (PAGE - 1, "page 0: page is beyond the end of the file"),
        (3 * PAGE, "page 3: page is beyond the end of the file \\(3 whole pages of 16384"),
        (3 * PAGE + 5000, "page 3: page is beyond the end of the file"),
    ],
)
def test_truncated_tablespace(actor, length, message):
    with pytest.raises(TablespaceError, match=message):
        read_ibd_sdi(actor[:length], "actor.ibd")


def test_truncation_after_the_sdi_pages_does_not_matter(actor):
    assert len(read_ibd_sdi(actor[: 4 * PAGE + 17])[1]) == 2


def test_wrong_page_type_at_the_sdi_root(actor):
    bad = _refinish(actor, 3, 24, struct.pack(">H", 17855))  # FIL_PAGE_INDEX instead of FIL_PAGE_SDI
    with pytest.raises(TablespaceError, match=r"actor.ibd: page 3: expected page type 17853, found 17855"):
        read_ibd_sdi(bad, "actor.ibd")


def test_sdi_root_pointing_elsewhere(actor):
    bad = _refinish(actor, 0, 10505 + 4, struct.pack(">I", 1))
    with pytest.raises(TablespaceError, match="SDI root page number 1 is outside"):
        read_ibd_sdi(bad)
    bad = _refinish(actor, 0, 10505 + 4, struct.pack(">I", 4))  # a B-tree page of the table, not SDI
    with pytest.raises(TablespaceError, match="page 4: expected page type 17853, found 17855"):
        read_ibd_sdi(bad)


def test_wrong_sdi_version(actor):
    bad = _refinish(actor, 0, 10505, struct.pack(">I", 2))
    with pytest.raises(TablespaceError, match="expected SDI version 1 at offset 10505, found 2"):
        read_ibd_sdi(bad)


@pytest.mark.parametrize(
    "flags,message",
    [
        (0x0021, "has no SDI flag: not a MySQL 8.0\\+ tablespace"),  # a 5.7 file-per-table tablespace
        (0x4021 | (4 << 1), "ROW_FORMAT=COMPRESSED"),
        (0x4021 | (1 << 13), "encrypted"),
        (0x4021 | (1 << 20), "invalid FSP_SPACE_FLAGS"),
        (0x4021 | (1 << 6), "invalid FSP_SPACE_FLAGS"),  # PAGE_SSIZE 1 = 1K pages
    ],
)
def test_flags_that_are_not_a_readable_80_tablespace(actor, flags, message):
    bad = _refinish(actor, 0, 38 + 16, struct.pack(">I", flags))
    with pytest.raises(TablespaceError, match=message):
        read_ibd_sdi(bad, "actor.ibd")


def test_corrupt_record_length_without_checksums_is_a_typed_error(actor):
    bad = bytearray(actor)
    rec = 3 * PAGE + 99 + struct.unpack_from(">H", actor, 3 * PAGE + 97)[0]  # first user record
    bad[rec + 29 : rec + 33] = struct.pack(">I", 1)  # compressed_len
    with pytest.raises(TablespaceError, match="page 3: SDI record \\(type 1, id 364\\): expected 1 compressed"):
        read_ibd_sdi(bytes(bad), "actor.ibd", verify_checksums=False)


def test_random_damage_gives_success_or_a_typed_error_only(actor):
    rng = random.Random(7069)
    outcomes = {"ok": 0, "error": 0}
    for _ in range(400):
        bad = bytearray(actor[: 5 * PAGE])
        for _ in range(rng.randint(1, 4)):
            page = rng.choice((0, 3, 3, 3))
            pos = page * PAGE + rng.choice((rng.randrange(PAGE), rng.randrange(94, 400), rng.randrange(38, 160)))
            bad[pos] = rng.randrange(256)
        try:
            read_ibd_sdi(bytes(bad), "fuzz.ibd", verify_checksums=False)
            outcomes["ok"] += 1
        except SdiError as exc:
            assert str(exc).startswith("fuzz.ibd")
            outcomes["error"] += 1
    assert outcomes["error"] > 50 and outcomes["ok"] > 0


def test_every_truncation_length_at_page_granularity(actor):
    for length in range(0, 5 * PAGE, 997):
        try:
            read_ibd_sdi(actor[:length])
        except TablespaceError:
            continue


def test_not_a_tablespace(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_bytes(b"hello world, this is not InnoDB" * 10)
    with pytest.raises(TablespaceError, match=r"notes.txt: page 0: invalid FSP_SPACE_FLAGS|notes.txt: page 0"):
        read_entries(p)
    (tmp_path / "empty.ibd").write_bytes(b"")
    with pytest.raises(SdiError, match="empty file"):
        read_entries(tmp_path / "empty.ibd")
    with pytest.raises(SdiError, match="cannot read"):
        read_entries(tmp_path / "missing.ibd")
