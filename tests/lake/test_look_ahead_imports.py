"""What ``binlake run`` does before its JVM starts is on every run's clock: on a new lake the look-ahead
(:mod:`binlake.lake.idle`) finds no table and builds no pyarrow filter for one, so it does not import pyarrow's
dataset module (a third of a second); a lake with tables is read with the filter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate

SCRIPT = """\
import json, sys
from binlake.lake.idle import look_ahead
from binlake.lake.layout import LakeLayout
from binlake.lake.options import RunOptions
ahead = look_ahead(LakeLayout(sys.argv[1]), sys.argv[2], RunOptions('db1'), 'spark')
print(json.dumps([ahead.new_bytes, 'pyarrow.dataset' in sys.modules]))
"""


def _look_ahead(lake: Path, landing: Path) -> list:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(lake), str(landing)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


def test_a_new_lakes_look_ahead_imports_no_pyarrow_dataset(tmp_path: Path) -> None:
    generate(tmp_path / "gen", GenerateConfig(seed=5, days=1, scale=0.002, source="db1"))
    landing = tmp_path / "gen" / "landing" / "db1"
    landed = sum(f.stat().st_size for f in landing.glob("mysql-bin.0*"))
    assert _look_ahead(tmp_path / "lake", landing) == [landed, False]
    # a lake whose checkpoint table exists is read, through the filter
    import pyarrow as pa
    from deltalake import write_deltalake

    lake = tmp_path / "lake2"
    write_deltalake(
        str(lake / "meta" / "checkpoints"),
        pa.table(
            {
                "source": ["other"],
                "table_name": ["t"],
                "_binlake_seq": [1],
                "binlog_file": ["mysql-bin.000001"],
                "pos": [4],
                "gtid_executed": [""],
            }
        ),
    )
    assert _look_ahead(lake, landing) == [landed, True]
