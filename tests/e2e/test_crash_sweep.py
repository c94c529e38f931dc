"""A crash between every pair of a daily run's Delta commits (issue #25): ``after_commit:<n>`` stops ``binlake
run`` after its n-th commit, for every n the run makes. The day's run ingests the day's new files and applies
them over a lake holding the day before (the daily load). After each crash a plain rerun must give the
generator's truth (nothing lost, nothing applied twice: the keyless audit_log table would double) with nothing
quarantined; every fourth rerun is run again and must commit nothing."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.lake.crash import CRASH_ENV, InjectedCrash
from tests.e2e.runner import binlake_run, delta_versions
from tests.e2e.test_generator_e2e import assert_equals_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]

DAY1, DAY2 = "2024-03-01", "2024-03-02"
MOST_COMMITS = 100  # a daily run of this sample makes far fewer; more means the sweep would never end


def _land(out: Path, landing: Path, day: dict) -> None:
    """Copy the files the generator wrote up to ``day``'s last binlog into ``landing/<source>``."""
    manifest = json.loads((out / "manifest.json").read_text())
    last = int(day["last_binlog"].rsplit(".", 1)[1])
    target = landing / manifest["source"]
    target.mkdir(parents=True, exist_ok=True)
    for f in sorted((out / "landing" / manifest["source"]).glob("mysql-bin.0*")):
        if int(f.name.rsplit(".", 1)[1]) <= last and not (target / f.name).exists():
            shutil.copy(f, target / f.name)


@pytest.mark.parametrize("engine", ["rust", "spark"])
def test_a_crash_after_any_commit_of_a_daily_run_then_a_rerun_converges(spark, tmp_path: Path, monkeypatch, engine):
    out = tmp_path / "gen"
    generate(
        out, GenerateConfig(seed=31, days=2, scale=0.002, start_date=dt.date(2024, 3, 1), max_binlog_size=48 * 1024)
    )
    days = json.loads((out / "manifest.json").read_text())["days"]
    base_landing, base = tmp_path / "landing-day1", tmp_path / "lake-day1"
    _land(out, base_landing, days[0])
    binlake_run(base_landing, base, "--end", DAY1, engine=engine)
    commits = 0
    for n in range(1, MOST_COMMITS):
        landing, lake = tmp_path / "landing", tmp_path / "lake"
        for path in (landing, lake):
            shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(base_landing, landing)
        shutil.copytree(base, lake)
        _land(out, landing, days[1])
        monkeypatch.setenv(CRASH_ENV, f"after_commit:{n}")
        try:
            binlake_run(landing, lake, "--end", DAY2, engine=engine)
        except InjectedCrash:
            pass
        else:
            commits = n - 1
            assert_equals_truth(out, lake, DAY2)
            break
        finally:
            monkeypatch.delenv(CRASH_ENV)
        [summary] = binlake_run(landing, lake, "--end", DAY2, engine=engine)
        assert summary["quarantined"] == 0, (n, summary)
        try:
            assert_equals_truth(out, lake, DAY2)
        except AssertionError as exc:
            raise AssertionError(f"rerun after a crash after commit {n} of the day's run: {exc}") from None
        if n % 4 == 1:
            versions = delta_versions(lake)
            binlake_run(landing, lake, "--end", DAY2, engine=engine)
            assert delta_versions(lake) == versions, f"a second rerun after a crash after commit {n} committed"
    else:
        raise AssertionError(f"the day's run made {MOST_COMMITS} commits or more")
    assert commits > 5, commits  # the hook is passed at the engines' commits: bronze, silver, meta tables
