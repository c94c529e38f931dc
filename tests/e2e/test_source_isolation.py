"""One bad thing stops only itself (issue #25 case 8): a source that fails is reported for it alone (its STOPPED
line, the run's exit code at the end) while the other sources load; a table whose column takes a name binlake
keeps for its own silver columns (``_binlake_*``) is blocked alone, with the reason, and ``--exclude`` keeps it
out of every step."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import shutil
from pathlib import Path

import pytest

from binlake.cli import main

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS_EVENTS = (30, 31, 32, 39, 40)


def run(landing: Path, lake: Path, *args: str) -> tuple[int, list[str], list[dict]]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["run", "--landing", str(landing), "--lake", str(lake), "--engine", "rust", "--json", *args])
    return (
        code,
        stderr.getvalue().splitlines(),
        [json.loads(line) for line in stdout.getvalue().splitlines() if line.startswith("{")],
    )


def test_a_source_that_fails_stops_alone_and_the_next_source_loads(spark, tmp_path: Path) -> None:
    """``a-bad`` has a damaged event and ``--on-decode-error fail``: it stops with its one line (file and offset);
    ``b-good``, after it in the run, loads everything; the run exits 2 naming ``a-bad``."""
    from binlake.binlog.scan import scan_events
    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate
    from tests.e2e.test_generator_e2e import assert_equals_truth

    out = tmp_path / "gen"
    generate(
        out, GenerateConfig(seed=3, days=1, scale=0.002, start_date=dt.date(2024, 3, 1), max_binlog_size=48 * 1024)
    )
    files = sorted((out / "landing" / "shop-primary").glob("mysql-bin.0*"))
    landing = tmp_path / "landing"
    for source in ("a-bad", "b-good"):
        shutil.copytree(out / "landing" / "shop-primary", landing / source)
    bad_file = landing / "a-bad" / files[0].name
    rows = [e for e in scan_events(str(bad_file)) if e.type_code in ROWS_EVENTS]
    bad = rows[len(rows) // 2]
    data = bytearray(bad_file.read_bytes())
    data[bad.pos + 19 + 4] ^= 0xFF  # its CRC32 no longer matches
    bad_file.write_bytes(bytes(data))
    lake = tmp_path / "lake"
    code, err, summaries = run(landing, lake, "--on-decode-error", "fail")
    assert code == 2, err[-20:]
    [stop] = [line for line in err if "STOPPED:" in line]
    assert stop.startswith("binlake run: [a-bad] STOPPED:") and f"{bad_file}, offset {bad.pos}" in stop
    assert err[-1].startswith(f"binlake: error: source(s) a-bad stopped: {bad_file}, offset {bad.pos}")
    assert err[-1].endswith("; the other sources loaded")
    assert [s["source"] for s in summaries] == ["b-good"]
    assert_equals_truth(out, lake, "2024-03-01")  # b-good loaded everything


def int_table(table_id: int, table: str, *names: str) -> tuple[int, bytes]:
    """A TABLE_MAP of INT columns with full metadata: names, signedness, primary key on the first column."""
    from tests.binlog import build

    n = len(names)
    optional = (
        build.names(*names) + build.optional_field(1, bytes((n + 7) // 8)) + build.optional_field(8, build.packed(0))
    )
    return build.table_map(table_id, "d", table, [3] * n, b"", [False] + [True] * (n - 1), optional)


def int_row(*values: int) -> bytes:
    from tests.binlog import build

    return build.image([False] * len(values), *(v.to_bytes(4, "little") for v in values))


def transactions(*rows: tuple[int, int], rotate_to: str = "") -> bytes:
    """A binlog: per (id, value), one transaction inserting it into `d`.`good` and `d`.`bad` (whose second
    column is named ``_binlake_op``); closed by a ROTATE to ``rotate_to`` when given."""
    import struct

    from tests.binlog import build

    def query(text: str) -> tuple[int, bytes]:
        return 2, struct.pack("<IIBHH", 1, 0, 1, 0, 0) + b"d\x00" + text.encode()

    events = []
    for i, v in rows:
        events += [
            query("BEGIN"),
            int_table(1, "good", "id", "v"),
            int_table(2, "bad", "id", "_binlake_op"),
            build.rows_event(30, 1, 2, int_row(i, v)),
            build.rows_event(30, 2, 2, int_row(i, v)),
            (16, i.to_bytes(8, "little")),
        ]
    if rotate_to:
        events.append((4, struct.pack("<Q", 4) + rotate_to.encode()))
    return build.binlog(*events)


def test_a_column_named_like_binlakes_own_blocks_its_table_alone_and_exclude_keeps_it_out(
    spark, tmp_path: Path
) -> None:
    from deltalake import DeltaTable

    landing, lake = tmp_path / "landing", tmp_path / "lake"
    (landing / "src").mkdir(parents=True)
    (landing / "src" / "binlog.000001").write_bytes(transactions((1, 10), (2, 20), rotate_to="binlog.000002"))
    code, err, [summary] = run(landing, lake)
    assert code == 0, err[-20:]
    why = summary["blocked_tables"]["d.bad"]
    assert "`_binlake_op`" in why and "--exclude d.bad" in why
    assert any("WARNING" in line and "`_binlake_op`" in line for line in err)
    good = sorted(
        (r["id"], r["v"]) for r in DeltaTable(str(lake / "silver" / "d__good")).to_pyarrow_table().to_pylist()
    )
    assert good == [(1, 10), (2, 20)]
    assert not (lake / "silver" / "d__bad").exists()
    quarantine = DeltaTable(str(lake / "meta" / "quarantine")).to_pyarrow_table().to_pylist()
    assert sorted((r["table_name"], r["status"]) for r in quarantine) == [("bad", "BLOCKED")] * 2
    # more changes land; the operator leaves the table out: every step skips it, the rest loads
    (landing / "src" / "binlog.000002").write_bytes(transactions((3, 30)))
    code, err, [summary] = run(landing, lake, "--exclude", "d.bad")
    assert code == 0, err[-20:]
    assert summary["blocked_tables"] == {} and summary["quarantined"] == 0
    good = sorted(
        (r["id"], r["v"]) for r in DeltaTable(str(lake / "silver" / "d__good")).to_pyarrow_table().to_pylist()
    )
    assert good == [(1, 10), (2, 20), (3, 30)]
    assert len(DeltaTable(str(lake / "meta" / "quarantine")).to_pyarrow_table()) == 2


@pytest.mark.parametrize(
    "ddl",
    [
        "ALTER TABLE bad RENAME COLUMN v TO _binlake_op",
        "ALTER TABLE bad CHANGE v _binlake_seq INT",
        "ALTER TABLE bad ADD COLUMN _binlake_x INT DEFAULT 5",
    ],
)
def test_a_ddl_naming_a_column_like_binlakes_own_blocks_its_table_alone(spark, tmp_path: Path, ddl: str) -> None:
    """A DDL that gives `d`.`bad` a column named ``_binlake_*`` blocks that table alone, with the reason a
    TABLE_MAP column of such a name gets; silver `bad` keeps its rows and columns, `good` loads on, the run exits
    0 (a rename onto silver's own column used to stop the whole source; an add put a `_binlake_x` column in
    silver)."""
    import struct

    from deltalake import DeltaTable

    from binlake.lake.silver import reserved_reason
    from tests.binlog import build

    def query(text: str) -> tuple[int, bytes]:
        return 2, struct.pack("<IIBHH", 1, 0, 1, 0, 0) + b"d\x00" + text.encode()

    new = ddl.split()[-1] if "RENAME" in ddl else ddl.split()[5]
    after = ["id", "v", new] if "ADD" in ddl else ["id", new]

    def trx(i: int) -> list:
        bad = int_table(2, "bad", *(after if i > 1 else ["id", "v"]))
        values = (i, 10 * i, 5) if i > 1 and "ADD" in ddl else (i, 10 * i)
        return [
            query("BEGIN"),
            int_table(1, "good", "id", "v"),
            bad,
            build.rows_event(30, 1, 2, int_row(i, 10 * i)),
            build.rows_event(30, 2, len(values), int_row(*values)),
            (16, i.to_bytes(8, "little")),
        ]

    landing, lake = tmp_path / "landing", tmp_path / "lake"
    (landing / "src").mkdir(parents=True)
    (landing / "src" / "binlog.000001").write_bytes(build.binlog(*trx(1), query(ddl), *trx(2), *trx(3)))
    code, err, [summary] = run(landing, lake)
    assert code == 0, err[-20:]
    assert summary["blocked_tables"] == {"d.bad": reserved_reason("d", "bad", [new])}
    good = DeltaTable(str(lake / "silver" / "d__good")).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["v"]) for r in good) == [(1, 10), (2, 20), (3, 30)]
    bad = DeltaTable(str(lake / "silver" / "d__bad")).to_pyarrow_table()
    assert [c for c in bad.column_names if not c.startswith("_binlake_")] == ["id", "v"]
    assert "_binlake_x" not in bad.column_names
    assert [(r["id"], r["v"], r["_binlake_op"]) for r in bad.to_pylist()] == [(1, 10, "insert")]
    quarantine = DeltaTable(str(lake / "meta" / "quarantine")).to_pyarrow_table().to_pylist()
    assert sorted((r["table_name"], r["status"]) for r in quarantine) == [("bad", "BLOCKED")] * 2
