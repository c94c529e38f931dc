"""``binlake run --on-decode-error quarantine|fail`` on a binlog with a damaged event in the middle (issue #16).

The landing folder is generated here (several files); one rows event near the middle of the first file gets a
flipped body byte, so its CRC32 no longer matches. ``quarantine`` (the default) loads everything else and keeps
the stretch's first bytes in ``meta/quarantine``, byte for byte as in the file; ``fail`` stops the source with one
line naming the file and the offset and writes nothing of the ingest, from ``binlake run`` and from the DAG's
ingest job alike. Only ``shop.customers`` is applied (``--include``): decoding reads every event all the same.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.runner import binlake_run

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS_EVENTS = (30, 31, 32, 39, 40)  # WRITE/UPDATE/DELETE_ROWS v2, PARTIAL_UPDATE_ROWS, TRANSACTION_PAYLOAD


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> dict:
    from binlake.binlog.scan import scan_events
    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate
    from binlake.pipeline.identity import landing_files

    root = tmp_path_factory.mktemp("decode-error")
    generate(
        root / "gen",
        GenerateConfig(seed=7, days=1, scale=0.002, start_date=dt.date(2024, 3, 1), max_binlog_size=48 * 1024),
    )
    source = json.loads((root / "gen" / "manifest.json").read_text())["source"]
    landing = root / "landing"
    shutil.copytree(root / "gen" / "landing", landing)
    shutil.copytree(root / "gen" / "sdi", root / "sdi")  # binlake run's default --sdi: next to landing
    files = [Path(f) for f in landing_files(landing / source)]
    assert len(files) >= 3
    rows = [e for e in scan_events(str(files[0])) if e.type_code in ROWS_EVENTS]
    bad = rows[len(rows) // 2]
    data = bytearray(files[0].read_bytes())
    data[bad.pos + 19 + 4] ^= 0xFF
    files[0].write_bytes(bytes(data))
    return {"landing": landing, "files": files, "pos": bad.pos, "data": bytes(data), "source": source}


def test_quarantine_keeps_the_stretch_bytes_and_loads_the_rest(spark, damaged, tmp_path) -> None:
    from binlake.lake.checkpoints import read_checkpoint
    from binlake.lake.delta import engine_for
    from binlake.lake.layout import LakeLayout
    from binlake.pipeline.bronze import RAW_CAP

    lake = LakeLayout(str(tmp_path / "lake"))
    [summary] = binlake_run(damaged["landing"], Path(lake.root), "--include", "shop.customers", engine="rust")
    assert summary["bronze_rows"]["error"] == 1 and summary["changes_applied"] > 0
    engine = engine_for(spark, "rust")
    [row] = [r.asDict() for r in engine.read(spark, lake.quarantine).where("kind = 'decode'").collect()]
    first, pos, data = damaged["files"][0], damaged["pos"], damaged["data"]
    assert (row["binlog_file"], row["pos"]) == (first.name, pos) and "CRC32" in row["reason"]
    assert bytes(row["raw"]) == data[pos : pos + RAW_CAP] and len(row["raw"]) == min(RAW_CAP, len(data) - pos)
    # the rest is loaded: the source's checkpoint is in its last file, past the damaged one
    assert read_checkpoint(spark, engine, lake.checkpoints, damaged["source"]).binlog_file == damaged["files"][-1].name
    # meta.run_metrics counts the stretch on the run's row
    [total] = engine.read(spark, lake.meta("run_metrics")).where("table_name = '*'").collect()
    assert total["decode_errors"] == 1


def test_fail_stops_the_source_with_one_line_naming_file_and_offset(spark, damaged, tmp_path, capsys) -> None:
    from binlake.cli import main
    from spark_jobs import ingest_binlogs

    lake = tmp_path / "lake"
    code = main(
        [
            "run",
            "--landing",
            str(damaged["landing"]),
            "--lake",
            str(lake),
            "--engine",
            "rust",
            "--include",
            "shop.customers",
            "--on-decode-error",
            "fail",
        ]
    )
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("binlake: error: ")]
    assert code == 2 and len(errors) == 1
    assert f"{damaged['files'][0]}, offset {damaged['pos']}" in errors[0] and "CRC32" in errors[0]
    assert "--on-decode-error quarantine" in errors[0]  # what to do next
    assert not (lake / "bronze").exists()  # nothing of the ingest was written
    # the DAG's ingest job takes the same policy
    assert (
        ingest_binlogs.main(
            [
                "--landing",
                str(damaged["landing"]),
                "--lake",
                str(lake),
                "--source",
                damaged["source"],
                "--engine",
                "rust",
                "--on-decode-error",
                "fail",
            ]
        )
        == 2
    )
    assert f"offset {damaged['pos']}" in capsys.readouterr().err and not (lake / "bronze").exists()
