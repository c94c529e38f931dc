"""Hostile tablespaces and SDI documents (issue #16): bounded inflate, bounded JSON, typed errors only."""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import pytest

from binlake.sdi import TablespaceError, read_ibd_sdi
from tests.sdi import ibd_builder as B

PAGE = 16384


def _external_record_image(compressed: bytes, declared_len: int) -> bytes:
    """One SDI record whose zlib data lives in a chain of FIL_PAGE_SDI_BLOB pages starting at page 4."""
    chunk = PAGE - 38 - 8 - 8 - 100
    n_blob = (len(compressed) + chunk - 1) // chunk
    ext = B.Rec((1, 10), struct.pack(">IIIQ", 77, 4, 38, len(compressed)), declared_len, len(compressed), external=True)
    pages = {3: (B.index_page(PAGE, 0, [ext]), B.FIL_PAGE_SDI)}
    pages.update(B.blob_pages(PAGE, compressed, 4, chunk=chunk))
    return B.tablespace(PAGE, 4 + n_blob + 1, 3, pages)


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    except TablespaceError:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_zlib_bomb_is_inflated_only_up_to_the_declared_length() -> None:
    bomb = zlib.compress(bytes(48 << 20), 9)
    image = _external_record_image(bomb, declared_len=1000)
    assert len(image) < 1 << 20
    with pytest.raises(TablespaceError, match="expected 1000 bytes after inflate, found more"):
        read_ibd_sdi(image, "bomb.ibd")
    assert _peak(lambda: read_ibd_sdi(image, "bomb.ibd")) < 8 << 20
    doc = b'{"a": 1}' * 50
    cut = _external_record_image(zlib.compress(doc)[:-6], declared_len=len(doc))
    with pytest.raises(TablespaceError, match="zlib inflate failed"):
        read_ibd_sdi(cut, "cut.ibd")


def test_declared_length_above_the_maximum_is_refused_before_inflating() -> None:
    bomb = zlib.compress(bytes(48 << 20), 9)
    image = _external_record_image(bomb, declared_len=48 << 20)
    with pytest.raises(TablespaceError, match="above the maximum SDI size 1048576"):
        read_ibd_sdi(image, "bomb.ibd", max_sdi_size=1 << 20)
    assert _peak(lambda: read_ibd_sdi(image, "bomb.ibd", max_sdi_size=1 << 20)) < 8 << 20


def _one_record_image(text: bytes) -> bytes:
    rec = B.sdi_leaf_record(1, 10, text)
    return B.tablespace(PAGE, 5, 3, {3: (B.index_page(PAGE, 0, [rec]), B.FIL_PAGE_SDI)})


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from binlake.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "text,message",
    [
        ("[" * 50000 + "]" * 50000, "nested more than 64 levels"),
        ('{"mysqld_version_id": ' + "9" * 5000 + "}", "more than a 64-bit integer"),
        ('{"a": NaN}', "NaN is not JSON"),
        ('{"a": 1e999}', "out of a double's range"),
        ("[" * 70 + "]" * 70, "nested more than 64 levels"),
    ],
)
def test_hostile_sdi_json_is_a_typed_error(tmp_path, capsys, text, message) -> None:
    path = tmp_path / "t_1.sdi"
    path.write_text(text)
    code, out, err = _cli(capsys, "sdi", str(path))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert message in err and str(path) in err


@pytest.mark.parametrize("fmt", ["jsonl", "ibd2sdi"])
def test_sdi_record_that_is_not_json_fails_instead_of_printing_invalid_json(tmp_path, capsys, fmt) -> None:
    path = tmp_path / "bad.ibd"
    path.write_bytes(_one_record_image(b"this is not json"))
    code, out, err = _cli(capsys, "sdi", "--format", fmt, str(path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "invalid JSON" in err and "type 1, id 10" in err
    if fmt == "jsonl":  # and a record that is JSON still comes out as a valid line
        import json

        path.write_bytes(_one_record_image(b'{"x": [1, 2]}'))
        code, out, err = _cli(capsys, "sdi", "--format", "jsonl", str(path))
        assert code == 0 and [json.loads(line)["sdi"] for line in out.splitlines()] == [{"x": [1, 2]}]
