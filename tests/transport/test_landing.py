"""The landing folder's crash recovery on real binlog files: every truncation point of a real file is cut back to
the last whole event, damaged events are cut, the manifest moves only with fsynced data, one writer at a time."""

from __future__ import annotations

import json
import struct

import pytest

from binlake.transport.errors import LandingError
from binlake.transport.landing import MANIFEST_NAME, LandingFolder, check_tail
from tests.support import fixture_path


def event_ends(data: bytes) -> list[int]:
    """Event boundaries of a complete file, from the manifest-listed event count's own walk of event_length."""
    ends, pos = [], 4
    while pos < len(data):
        pos += struct.unpack_from("<I", data, pos + 9)[0]
        ends.append(pos)
    return ends


@pytest.mark.parametrize(
    "name, events",
    [
        ("mysql-enum-string-set.000001", 21),  # MySQL 8.0.28, CRC32 (manifest.json histogram)
        ("mariadb-bin.000001", 13),  # MariaDB 10.5, CRC32
    ],
)
def test_prefixes_cut_back_to_the_last_whole_event(tmp_path, name: str, events: int) -> None:
    data = fixture_path("binlog", "rust_mysql_common", name).read_bytes()
    ends = event_ends(data)
    assert len(ends) == events and ends[-1] == len(data)
    path = tmp_path / name
    # every prefix of the small MariaDB file; for the larger one every 29th plus each boundary's neighbours
    sizes = set(range(0, len(data) + 1, 1 if len(data) < 1000 else 29))
    sizes |= {e + d for e in [0, 4, *ends] for d in (-1, 0, 1, 18, 19, 20) if 0 <= e + d <= len(data)}
    for size in sorted(sizes):
        path.write_bytes(data[:size])
        check = check_tail(path, 0)
        expected = max([4] + [e for e in ends if e <= size]) if size >= 4 else 0
        assert (check.end, check.cut) == (expected, size - expected), size
        assert check.checksum_alg == (1 if expected > 4 else 0)


def test_flipped_byte_in_the_tail_is_cut_but_trusted_part_is_not_rechecked(tmp_path) -> None:
    data = bytearray(fixture_path("binlog", "rust_mysql_common", "mysql-enum-string-set.000001").read_bytes())
    ends = event_ends(bytes(data))
    data[ends[9] + 25] ^= 0x40  # inside the 11th event's body: its CRC32 no longer matches
    path = tmp_path / "b.000001"
    path.write_bytes(bytes(data))
    check = check_tail(path, 0)
    assert (check.end, check.cut) == (ends[9], len(data) - ends[9]) and "CRC32" in check.reason
    assert check_tail(path, ends[10]).end == len(data)  # bytes before the trusted position are not re-read


def test_recovery_truncates_and_moves_the_manifest(tmp_path) -> None:
    data = fixture_path("binlog", "rust_mysql_common", "mysql-enum-string-set.000001").read_bytes()
    ends = event_ends(data)
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "b.000007").write_bytes(data[: ends[5] + 7])  # 7 bytes of a torn write after event 6
    (folder / MANIFEST_NAME).write_text(
        json.dumps(
            {
                "version": 1,
                "source": "s",
                "server_id": 1,
                "current_file": "b.000007",
                "position": ends[2],
                "closed": ["b.000006"],
            }
        )
    )
    with LandingFolder(tmp_path, "src", "s") as landing:
        check = landing.open()
        assert check is not None and check.cut == 7
        assert (folder / "b.000007").read_bytes() == data[: ends[5]]
        assert landing.size == ends[5]
        with pytest.raises(LandingError, match="another binlake fetch is writing"):
            LandingFolder(tmp_path, "src", "s").open()
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert (manifest["position"], manifest["closed"]) == (ends[5], ["b.000006"])


def test_file_shorter_than_the_manifest_is_an_error(tmp_path) -> None:
    data = fixture_path("binlog", "rust_mysql_common", "mysql-enum-string-set.000001").read_bytes()
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "b.000001").write_bytes(data[:500])
    (folder / MANIFEST_NAME).write_text(
        json.dumps({"version": 1, "source": "s", "current_file": "b.000001", "position": 2000, "closed": []})
    )
    with pytest.raises(LandingError, match="changed outside binlake"):
        LandingFolder(tmp_path, "src", "s").open()


def test_unreadable_manifest_says_what_to_do(tmp_path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(LandingError, match="unreadable manifest"):
        LandingFolder(tmp_path, "src", "s").open()
