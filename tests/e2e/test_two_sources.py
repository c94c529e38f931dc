"""Two sources, one table: a table belongs to the first source that loads it; another source writing the same
``db.table`` has its changes quarantined (kind ``schema``, the owner named) instead of merged in an undefined
order, and the run summary says so. The owner's silver equals its own truth."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from tests.e2e.runner import binlake_run
from tests.e2e.test_generator_e2e import assert_equals_truth

pytestmark = [pytest.mark.spark, pytest.mark.slow]

START = dt.date(2024, 3, 1)


def test_the_first_source_owns_a_table_and_the_second_is_quarantined(spark, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    landing = tmp_path / "landing"
    gens = {}
    for name, seed in (("a-primary", 1), ("b-other", 2)):
        out = gens[name] = tmp_path / f"gen-{name}"
        generate(out, GenerateConfig(seed=seed, days=1, scale=0.002, start_date=START))
        [folder] = [p for p in (out / "landing").iterdir() if p.is_dir()]
        shutil.copytree(folder, landing / name)
    lake = tmp_path / "lake"
    first, second = binlake_run(landing, lake, "--end", START.isoformat(), engine="rust")
    assert (first["source"], second["source"]) == ("a-primary", "b-other")
    assert first["changes_applied"] > 0 and not first["blocked_tables"]
    assert second["changes_applied"] == 0
    assert set(second["blocked_tables"]) == {"shop.customers", "shop.products", "shop.orders", "shop.audit_log"}
    assert all("belongs to source 'a-primary'" in why for why in second["blocked_tables"].values())
    assert_equals_truth(gens["a-primary"], lake, START.isoformat())
    quarantine = DeltaTable(str(lake / "meta" / "quarantine")).to_pyarrow_table().to_pylist()
    theirs = [q for q in quarantine if q["source"] == "b-other"]
    bronze = DeltaTable(str(lake / "bronze" / "binlog_events")).to_pyarrow_table(columns=["source", "op"]).to_pylist()
    changes = sum(1 for r in bronze if r["source"] == "b-other" and r["op"] in ("insert", "update", "delete"))
    assert len(theirs) == changes == second["quarantined"] and {q["kind"] for q in theirs} == {"schema"}


@pytest.mark.mariadb
@pytest.mark.parametrize("engine", ["rust", "spark"])
def test_a_second_sources_snapshot_of_an_owned_table_is_refused(
    spark, tmp_path: Path, monkeypatch, engine: str
) -> None:
    """Issue 25, case 3: source a's snapshot of t.t seeds it (a owns it); source b's snapshot of t.t (another
    server, other rows) is refused for that table, reported and counted, while b's other table seeds; silver t.t
    stays a's server's rows (before: b's snapshot overwrote it, exit 0)."""
    import contextlib
    import io
    import json
    from collections import Counter

    from binlake.cli import main
    from tests.e2e.lake_compare import silver_rows
    from tests.mariadb_server import MariaDBServer, require_mariadb

    require_mariadb()
    monkeypatch.setenv("BINLAKE_MYSQL_PASSWORD", "pw")
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    user = (
        "CREATE USER 'snap'@'127.0.0.1' IDENTIFIED BY 'pw'; GRANT SELECT, RELOAD, REPLICATION SLAVE, "
        "REPLICATION CLIENT ON *.* TO 'snap'@'127.0.0.1'; CREATE DATABASE t; "
        "CREATE TABLE t.t (id INT PRIMARY KEY, v VARCHAR(10));"
    )

    def cli(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
        return code, out.getvalue(), err.getvalue()

    truth = {}
    for name, rows, other in (("a", "(1, 'a1'), (2, 'a2'), (3, 'a3')", "u"), ("b", "(7, 'b7')", "w")):
        with MariaDBServer(tmp_path / f"server-{name}") as server:
            server.execute(
                user + f"INSERT INTO t.t VALUES {rows}; CREATE TABLE t.{other} (id INT PRIMARY KEY); "
                f"INSERT INTO t.{other} VALUES (1), (2);"
            )
            uri = f"mysql://snap@127.0.0.1:{server.port}/?server_id=4310&name={name}"
            code, out, err = cli("snapshot", "--source", uri, "--landing", str(landing), "--include", "t.*")
            assert code == 0, out + err
            truth[name] = Counter(
                json.dumps(r, sort_keys=True) for r in server.execute("SELECT id, v FROM t.t").splitlines()
            )
    a_rows = Counter(json.dumps(line, sort_keys=True) for line in ("1\ta1", "2\ta2", "3\ta3"))
    assert truth["a"] == a_rows
    code, out, err = cli("run", "--landing", str(landing), "--lake", str(lake), "--engine", engine, "--json")
    assert code == 0, err
    assert Counter(json.dumps(f"{r['id']}\t{r['v']}", sort_keys=True) for r in silver_rows(lake, "t", "t")) == a_rows
    first, second = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert (first["source"], first["seeded_tables"]) == ("a", ["t.t", "t.u"])
    assert (second["source"], second["seeded_tables"], second["seeds_refused"]) == ("b", ["t.w"], ["t.t"])
    assert "t.t not seeded: the table belongs to source 'a'" in err


@pytest.mark.mariadb
def test_a_second_sources_drop_database_spares_the_tables_another_source_owns(spark, tmp_path: Path) -> None:
    """Source a loads t.t; source b (another server) creates t.u in a database of the same name, then drops the
    database: b's own t.u is retired, a's t.t stays with a's rows (before: b's DROP DATABASE retired it too)."""
    from tests.e2e.lake_compare import silver_rows
    from tests.mariadb_server import MariaDBServer, require_mariadb

    require_mariadb()
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    statements = {
        "a": "CREATE DATABASE t; CREATE TABLE t.t (id INT PRIMARY KEY, v VARCHAR(10)); "
        "INSERT INTO t.t VALUES (1, 'a1'), (2, 'a2')",
        "b": "CREATE DATABASE t; CREATE TABLE t.u (id INT PRIMARY KEY); INSERT INTO t.u VALUES (1)",
    }
    for name, sql in statements.items():
        with MariaDBServer(tmp_path / f"server-{name}") as server:
            server.execute(sql)
            if name == "b":
                server.execute("DROP DATABASE t")
            (landing / name).mkdir(parents=True)
            for f in server.binlog_files():
                shutil.copyfile(f, landing / name / f.name)
    first, second = binlake_run(landing, lake, engine="rust")
    assert (first["source"], second["source"]) == ("a", "b")
    assert sorted((r["id"], r["v"]) for r in silver_rows(lake, "t", "t")) == [(1, "a1"), (2, "a2")]
    assert not (lake / "silver" / "t__u").exists()  # b's own table: retired by b's drop
    assert any(d.startswith("DropDatabase t.") for d in second["ddl"]), second["ddl"]
