"""One rule decides what a day applies: the commit time of each transaction (a prefix of the binlog order up to
the first transaction committed at or after the cutoff), whatever the files' own header times say. A replica's
binlog files are opened (FORMAT_DESCRIPTION_EVENT time) after the transactions they replay were committed: a day
must still apply them."""

from __future__ import annotations

import datetime as dt
import struct
import zlib
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from tests.e2e.runner import binlake_run
from tests.e2e.test_generator_e2e import assert_equals_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]

START = dt.date(2024, 3, 1)


def stamp_format_description(path: Path, when: int) -> None:
    """Set the header timestamp of the file's FORMAT_DESCRIPTION_EVENT (at offset 4) and fix its CRC32."""
    data = bytearray(path.read_bytes())
    size = struct.unpack_from("<I", data, 4 + 9)[0]
    has_crc = zlib.crc32(bytes(data[4 : 4 + size - 4])) == struct.unpack_from("<I", data, 4 + size - 4)[0]
    struct.pack_into("<I", data, 4, when)
    if has_crc:
        struct.pack_into("<I", data, 4 + size - 4, zlib.crc32(bytes(data[4 : 4 + size - 4])))
    path.write_bytes(bytes(data))


def test_files_opened_after_their_transactions_still_apply_on_their_commit_day(spark, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    generate(out, GenerateConfig(seed=5, days=2, scale=0.003, start_date=START, max_binlog_size=96 * 1024))
    landing = out / "landing"
    later = int(dt.datetime(2024, 4, 1, tzinfo=dt.timezone.utc).timestamp())
    files = sorted(landing.glob("*/mysql-bin.0*"))
    for f in files:
        stamp_format_description(f, later)
    from binlake.binlog import open_binlog

    assert all(open_binlog(f).format_description.header.timestamp == later for f in files)  # still valid
    lake = tmp_path / "lake"
    [day1] = binlake_run(landing, lake, "--end", START.isoformat(), engine="rust")
    assert day1["files"] == len(files) and day1["changes_applied"] > 0
    assert_equals_truth(out, lake, START.isoformat())
    [day2] = binlake_run(landing, lake, "--end", (START + dt.timedelta(days=1)).isoformat(), engine="rust")
    assert day2["files"] == 0 and day2["changes_applied"] > 0  # ingested once; applied by commit time
    assert_equals_truth(out, lake, (START + dt.timedelta(days=1)).isoformat())
