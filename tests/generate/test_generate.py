"""``binlake generate``: its binlogs decode (with binlake's reader) to exactly the operations of its own model, DDL
statements included (alone in their transactions, at their positions); replaying the decoded changes and DDL
(JSON diffs via binlake.mysqljson.apply_json_diffs, DDL as binlake.pipeline.ddl reads it) gives exactly its
truth files; its SDI parses with binlake.sdi and each table version's SDI matches the TABLE_MAPs that follow
its DDL; and the output is deterministic."""

from __future__ import annotations

import hashlib
import json
import struct
from collections import Counter
from pathlib import Path

import pytest

from binlake.binlog import constants as C
from binlake.binlog import events as ev
from binlake.binlog.api import iter_row_changes, open_binlog
from binlake.binlog.reader import read_events
from binlake.cli import main as cli_main
from binlake.generate.config import GenerateConfig
from binlake.generate.run import generate
from binlake.generate.tables import ColumnDef, TableDef
from binlake.generate.truth import truth_lines
from binlake.generate.workload import Workload
from binlake.mysqljson import BinaryJson, apply_json_diffs

TINY = dict(days=2, scale=0.002, compression_share=0.3, max_binlog_size=48_000)


def _config(**kw) -> GenerateConfig:
    return GenerateConfig(**{**TINY, **kw})


@pytest.fixture(
    scope="module",
    params=[("full", True), ("minimal", True), ("noblob", False)],
    ids=["full-ddl", "minimal-ddl", "noblob"],
)
def generated(request, tmp_path_factory):
    row_image, ddl = request.param
    config = _config(row_image=row_image, ddl=ddl, days=3 if ddl else 2)  # each DDL migration on a day of its own
    out = tmp_path_factory.mktemp(f"gen-{row_image}")
    result = generate(out, config)
    return config, out, result


def _binlogs(out: Path) -> list[Path]:
    return sorted((out / "landing" / "shop-primary").glob("mysql-bin.0*"))


def _decoded(out: Path):
    return [rc for f in _binlogs(out) for rc in iter_row_changes(f)]


def _model(config: GenerateConfig):
    """The model's own row changes: (gno, statement, change) in commit order."""
    return [
        (t.gno, s, c) for _, _, txns in Workload(config).days() for t in txns for s in t.statements for c in s.changes
    ]


def _gno(gtid: str) -> int:
    return int(gtid.rsplit(":", 1)[1])


def _transactions(out: Path) -> list[tuple[int, str, list]]:
    """(gno, kind, events) of every transaction of the binlogs, in order (rows not decoded)."""
    return [
        (_gno(t.gtid), t.kind, t.events)
        for f in _binlogs(out)
        for t in open_binlog(f, decode_rows=False).transactions()
    ]


def _same(decoded, model) -> bool:
    if isinstance(decoded, BinaryJson):
        return decoded.value == model
    return decoded == model and type(decoded) is type(model)


def test_binlogs_decode_to_exactly_the_model_operations(generated):
    config, out, _ = generated
    decoded = _decoded(out)
    model = _model(config)
    assert len(decoded) == len(model) > 500
    seen = Counter()
    for rc, (gno, stmt, change) in zip(decoded, model):
        table = stmt.table
        names = [c.name for c in table.columns]
        pk = [names[i] for i in table.pk_indexes]
        assert rc.gtid.endswith(f":{gno}") and (rc.db, rc.table, rc.op) == (table.db, table.name, stmt.kind)
        for image, row in ((rc.before, change.before), (rc.after, change.after)):
            if row is None:
                assert image is None
                continue
            for name, value in image.items():
                assert _same(value, row[names.index(name)]), (rc, name)
        if stmt.kind == "insert":
            assert set(rc.after) == set(names)  # every image type logs whole inserts
        elif config.row_image == "full" or not pk:
            assert set(rc.before) == set(names)
        elif config.row_image == "minimal":
            assert set(rc.before) == set(pk)
            if stmt.kind == "update":
                assert set(rc.after) | set(rc.diffs or ()) == {names[i] for i in change.assigned}
        else:  # noblob: blobs only when key or assigned
            blobs = {c.name for c in table.columns if c.is_blob}
            assert set(rc.before) == set(names) - (blobs - set(pk))
        edits = dict(change.edits)
        for name, diffs in (rc.diffs or {}).items():
            model_edits = edits.pop(names.index(name))
            assert [(int(d.op), str(d.path), d.value) for d in diffs] == [
                (e.operation, e.path_text, e.value) for e in model_edits
            ]
            seen["partial"] += 1
            seen["multi"] += len(diffs) > 1
            seen.update(f"op{int(d.op)}" for d in diffs)
        for index in edits:  # edits logged as the full document (FR12)
            assert _same(rc.after[names[index]], change.after[index])
            seen["full_json_fallback"] += 1
        if stmt.kind == "update" and pk and change.before[table.pk_indexes[0]] != change.after[table.pk_indexes[0]]:
            seen["pk_change"] += 1
        seen[f"{table.name}.{stmt.kind}"] += 1
        seen["nulls"] += sum(v is None for v in (change.after or change.before))
    assert seen["partial"] > 20 and seen["multi"] > 5 and seen["full_json_fallback"] >= 1
    assert seen["op0"] and seen["op1"] and seen["op2"]  # REPLACE, INSERT and REMOVE diffs
    assert seen["pk_change"] >= 1 and seen["nulls"] > 100
    no_pk = ("audit_log", "cart_items")  # the tables without a primary key
    assert sum(seen[f"{t}.update"] for t in no_pk) and sum(seen[f"{t}.delete"] for t in no_pk)


def test_ddl_is_logged_alone_at_its_position(generated):
    """Each DDL of the model is one transaction of its own: GTID and a QUERY with the statement and the database
    (no BEGIN, no XID), at the position the manifest names; every other transaction is BEGIN ... XID."""
    config, out, _ = generated
    manifest = json.loads((out / "manifest.json").read_text())
    model = [(t.gno, t.ddl_db, t.ddl) for _, _, txns in Workload(config).days() for t in txns if t.ddl]
    decoded, where = [], {}
    for f in _binlogs(out):
        for trx in open_binlog(f, decode_rows=False).transactions():
            bodies = [e.body for e in trx.events]
            queries = [b for b in bodies if isinstance(b, ev.QueryEvent)]
            if trx.kind == "ddl":
                assert [type(b) for b in bodies] == [ev.GtidEvent, ev.QueryEvent]
                decoded.append((_gno(trx.gtid), queries[0].db, queries[0].query))
                where[_gno(trx.gtid)] = (f.name, trx.start_pos)
            else:
                assert trx.kind == "commit" and [q.query for q in queries] == ["BEGIN"]
    assert decoded == model
    assert [(d["gno"], d["db"], d["statement"]) for d in manifest["ddl"]] == model
    assert all(where[d["gno"]] == (d["binlog_file"], d["binlog_pos"]) for d in manifest["ddl"])
    assert len(model) == 1 + 4 + (5 + 11 + 1 if config.ddl else 1)  # CREATEs, the customers ALTER, the plan


def test_binlog_files_are_rotated_compressed_and_checksummed(generated):
    config, out, result = generated
    manifest = json.loads((out / "manifest.json").read_text())
    files = _binlogs(out)
    assert [p.name for p in files] == [b["file"] for b in manifest["binlogs"]] and len(files) >= 2 * config.days
    assert manifest["days"][1]["first_binlog"] > manifest["days"][0]["last_binlog"]  # a new file each day
    types = Counter()
    for f in files:
        for e in read_events(open(f, "rb"), file=str(f)):  # verifies every CRC32
            types[e.header.type_code] += 1
            if e.payload_pos is None and not isinstance(e.body, ev.FormatDescriptionEvent):
                assert e.header.log_pos == e.pos + e.header.event_size
    assert types[C.TRANSACTION_PAYLOAD_EVENT] > 20 and types[C.PARTIAL_UPDATE_ROWS_EVENT] > 20
    assert types[C.GTID_LOG_EVENT] == manifest["days"][-1]["last_gno"] == result.transactions


def _replay(out: Path, manifest: dict) -> tuple[dict[str, list[str]], list[dict]]:
    """A tiny applier: decoded changes applied in order (JSON diffs with apply_json_diffs), DDL as
    binlake.pipeline.ddl reads it (ADD COLUMN's DEFAULT through its default_value), a table's columns from
    its TABLE_MAPs (each one checked against the columns the DDL before it left). A table the manifest names
    blocked keeps its rows and columns as of the blocking DDL; its later row changes are counted.

    Returns the truth lines of every table name seen at the end of each day (no rows for a name no table
    holds any more) and the counts of blocked row changes per day."""
    from binlake.pipeline import ddl as D

    transactions = _transactions(out)
    changes: dict[int, list] = {}
    for rc in _decoded(out):
        changes.setdefault(_gno(rc.gtid), []).append(rc)
    blocked = {gno: name.split(".", 1)[1] for name, gno in manifest["blocked"].items()}
    tables: dict[str, dict] = {}  # name -> {"columns", "types", "pk", "rows"}
    frozen: set[str] = set()
    seen: dict[str, str] = {}  # every table name -> its database
    blocked_changes: dict[str, int] = {}
    serial = 0

    def key(t: dict, row: dict):
        return tuple(row[c] for c in t["pk"]) if t["pk"] else None

    def ddl(statement: str, db: str, gno: int) -> None:
        for a in D.parse_ddl(statement, db):
            if a.table in frozen:
                continue
            if isinstance(a, D.CreateTable):
                tables[a.table] = {"columns": [], "types": {}, "pk": [], "rows": {}}
                seen[a.table] = a.db
            elif isinstance(a, D.Truncate):
                tables[a.table]["rows"].clear()
            elif isinstance(a, D.DropTable):
                del tables[a.table]
            elif isinstance(a, D.RenameTable):
                tables[a.new_table] = tables.pop(a.table)
                seen[a.new_table] = a.new_db
            elif isinstance(a, D.AddColumn):
                t = tables[a.table]
                if a.position is None:
                    t["columns"].append(a.column)
                else:
                    after = a.position.kind == "after"
                    t["columns"].insert(t["columns"].index(a.position.column) + 1 if after else 0, a.column)
                value = D.default_value(
                    a.default_sql, D.silver_type_of(a.mysql_type_text), a.mysql_type_text, a.not_null
                )
                for row in t["rows"].values():
                    row[a.column] = value
            elif isinstance(a, (D.DropColumn, D.RenameColumn)):
                t = tables[a.table]
                old = a.column if isinstance(a, D.DropColumn) else a.old
                at = t["columns"].index(old)
                del t["columns"][at]
                code = t["types"].pop(old)
                if isinstance(a, D.RenameColumn):
                    t["columns"].insert(at, a.new)
                    t["types"][a.new] = code
                for row in t["rows"].values():
                    value = row.pop(old)
                    if isinstance(a, D.RenameColumn):
                        row[a.new] = value
            elif isinstance(a, D.ModifyColumn):  # FLOAT -> DOUBLE: the float's exact value
                t = tables[a.table]
                if t["types"][a.column] == C.MYSQL_TYPE_FLOAT and D.silver_type_of(a.new_type_text) == "double":
                    for row in t["rows"].values():
                        if row[a.column] is not None:
                            row[a.column] = struct.unpack("<f", struct.pack("<f", row[a.column]))[0]
        if gno in blocked:
            frozen.add(blocked[gno])

    def snapshot(date: str) -> None:
        for name, db in seen.items():
            t = tables.get(name)
            lines = []
            if t is not None:
                table = TableDef(
                    db, name, tuple(ColumnDef(c, "", t["types"].get(c, 0)) for c in t["columns"]), tuple(t["pk"])
                )
                lines = truth_lines(table, [tuple(_plain(r.get(c)) for c in t["columns"]) for r in t["rows"].values()])
            snapshots[f"{db}.{name}/day={date}"] = lines
        counts.append({f"{seen[name]}.{name}": n for name, n in blocked_changes.items()})

    snapshots: dict[str, list[str]] = {}
    counts: list[dict] = []
    days = iter(manifest["days"])
    day = next(days)
    for gno, kind, events in transactions:
        while gno > day["last_gno"]:
            snapshot(day["date"])
            day = next(days)
        if kind == "ddl":
            query = events[-1].body
            ddl(query.query, query.db, gno)
            continue
        for tm in (e.body for e in events if isinstance(e.body, ev.TableMapEvent)):
            t = tables[tm.table]
            if tm.table in frozen:
                continue
            names = list(tm.column_names)
            assert t["columns"] in ([], names), (gno, tm.table, t["columns"], names)
            t["columns"] = names
            t["types"] = dict(zip(names, tm.column_types))
            t["pk"] = [names[i] for i in tm.simple_primary_key or ()]
        for rc in changes.get(gno, ()):
            if rc.table in frozen:
                blocked_changes[rc.table] = blocked_changes.get(rc.table, 0) + 1
                continue
            t = tables[rc.table]
            rows = t["rows"]
            if rc.op == "insert":
                serial += 1
                rows[key(t, rc.after) or serial] = dict(rc.after)
                continue
            k = key(t, rc.before)
            if k is None:  # no primary key: the first row equal to the before image
                k = next(s for s, r in rows.items() if all(r.get(n) == v for n, v in rc.before.items()))
            row = rows.pop(k)
            if rc.op == "update":
                row.update(rc.after)
                for name, diffs in (rc.diffs or {}).items():
                    result = apply_json_diffs(row[name], diffs)
                    assert result.ok, result.reason
                    row[name] = result.document
                rows[key(t, row) or k] = row
    snapshot(day["date"])
    for day in days:
        snapshot(day["date"])
    return snapshots, counts


def _plain(value):
    return value.value if isinstance(value, BinaryJson) else value


def test_replaying_decoded_changes_gives_the_truth_files(generated):
    config, out, _ = generated
    manifest = json.loads((out / "manifest.json").read_text())
    replayed, blocked_changes = _replay(out, manifest)
    truth_files = {f"{p.parent.name}/{p.stem}": p for p in (out / "truth").rglob("*.jsonl")}
    assert set(replayed) == set(truth_files)
    for name, path in truth_files.items():
        assert replayed[name] == path.read_text(encoding="utf-8").splitlines(), path
    assert blocked_changes == [d["blocked_changes"] for d in manifest["days"]]
    days = [d["date"] for d in manifest["days"]]
    empty = {name for name, lines in replayed.items() if not lines}
    if config.ddl:  # renamed and dropped names are empty; the blocked table's later changes were counted
        assert {f"shop.wishlists/day={d}" for d in days} | {f"shop.sessions/day={days[0]}"} <= empty
        assert blocked_changes[-1]["shop.coupons"] > 3 and len(truth_files) > 10 * len(days)
    else:
        assert not empty and len(truth_files) == 4 * len(days)


def test_sdi_of_each_table_version_matches_the_table_maps_that_follow_its_ddl(generated):
    """Every TABLE_MAP names the newest version of its table at its position (its table id is that version's),
    and that version's SDI gives its columns, types, signedness and primary key; the versions the TABLE_MAPs
    name are exactly those the model wrote rows with."""
    from binlake.sdi import read_entries, table_schema

    config, out, _ = generated
    manifest = json.loads((out / "manifest.json").read_text())
    versions = {v["table_id"]: v for v in manifest["table_versions"]}
    schemas = {}
    for table_id, info in versions.items():
        for rel in info["sdi"]:
            tables = [d.table for d in (e.document() for e in read_entries(out / rel)) if d.table is not None]
            assert [t.name for t in tables] == [info["table"]]
            schemas.setdefault(table_id, table_schema(tables[0]))
    newest: dict[str, int] = {}  # table name -> table id of its newest version so far
    ddl_at = {(v["binlog_file"], v["binlog_pos"]): v for v in manifest["table_versions"]}
    named = set()
    for f in _binlogs(out):
        for e in read_events(open(f, "rb")):
            if e.payload_pos is None and (f.name, e.pos) in ddl_at:  # the GTID event of a DDL
                v = ddl_at[(f.name, e.pos)]
                newest[v["table"]] = v["table_id"]
            if not isinstance(e.body, ev.TableMapEvent):
                continue
            tm = e.body
            assert newest[tm.table] == tm.table_id, (f.name, e.pos, tm.table)
            schema = schemas[tm.table_id]
            assert [c.name for c in schema.columns] == list(tm.column_names)
            assert [c.type_code for c in schema.columns] == list(tm.column_types)
            assert [c.unsigned for c in schema.columns if c.type_code in C.NUMERIC_TYPES] == list(tm.signedness)
            assert tuple(i for i, _ in schema.primary_key) == (tm.simple_primary_key or ())
            named.add(tm.table_id)
    model = {s.table.table_id for _, _, txns in Workload(config).days() for t in txns for s in t.statements}
    assert named == model
    assert len(named) >= (15 if config.ddl else 5)


def _digest(out: Path) -> dict[str, str]:
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("ddl", [False, True])
def test_output_is_deterministic_per_seed(tmp_path, ddl):
    config = _config(days=1, scale=0.001, ddl=ddl)
    generate(tmp_path / "a", config)
    generate(tmp_path / "b", config)
    generate(tmp_path / "c", _config(days=1, scale=0.001, seed=2, ddl=ddl))
    a, b, c = _digest(tmp_path / "a"), _digest(tmp_path / "b"), _digest(tmp_path / "c")
    assert a == b and len(a) > 10
    assert a["landing/shop-primary/mysql-bin.000001"] != c["landing/shop-primary/mysql-bin.000001"]


def test_generate_cli(tmp_path, capsys):
    assert (
        cli_main(
            [
                "generate",
                "--out",
                str(tmp_path),
                "--days",
                "1",
                "--scale",
                "0.001",
                "--tables",
                "orders,audit_log",
                "--json-size",
                "300",
                "--partial-share",
                "1",
                "--compression-share",
                "0",
                "--row-image",
                "noblob",
            ]
        )
        == 0
    )
    assert "binlog files" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "truth").iterdir()) == ["shop.audit_log", "shop.orders"]
    types = Counter(e.header.type_code for f in _binlogs(tmp_path) for e in read_events(open(f, "rb")))
    assert types[C.TRANSACTION_PAYLOAD_EVENT] == 0
    assert cli_main(["generate", "--out", str(tmp_path / "x"), "--tables", "nope"]) == 2


def test_generate_help_explains_the_workload(capsys):
    with pytest.raises(SystemExit):
        cli_main(["generate", "--help"])
    text = capsys.readouterr().out
    for word in (
        "--seed",
        "--days",
        "--scale",
        "--tables",
        "--json-size",
        "--partial-share",
        "--compression-share",
        "JSON_ARRAY_INSERT",
        "no primary key",
        "ALTER TABLE",
        "truth/",
        "100 MB",
    ):
        assert word in text


def test_binlake_rows_jsonl_decodes_a_generated_file(generated, capsys):
    config, out, _ = generated
    f = _binlogs(out)[2]
    capsys.readouterr()
    assert cli_main(["rows", "--format", "jsonl", str(f)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    got = [(int(d["gtid"].rsplit(":", 1)[1]), d["table"], d["op"]) for d in lines]
    gnos = {g for g, _, _ in got}
    expected = [(g, s.table.name, s.kind) for g, s, _ in _model(config) if g in gnos]
    assert got == expected and len(got) > 10


def test_copy_of_generated_binlogs_is_byte_identical(generated, tmp_path):
    """The cases real fixtures lack (INSERT/REMOVE and multi-diff partial JSON, partial updates inside
    compressed payloads, MINIMAL/NOBLOB images) survive decode + re-encode byte for byte."""
    from binlake.binlog.encode_copy import copy_binlog

    for f in _binlogs(generated[1]):
        copy_binlog(f, tmp_path / f.name)
        assert (tmp_path / f.name).read_bytes() == f.read_bytes(), f.name


@pytest.mark.slow
def test_bigger_workload_decodes_and_replays_to_the_truth(tmp_path):
    config = GenerateConfig(days=3, scale=0.03, json_size=2500, alter_day=1, max_binlog_size=400_000, ddl=True)
    out = tmp_path / "gen"
    generate(out, config)
    model = _model(config)
    decoded = _decoded(out)
    assert len(decoded) == len(model) > 10_000
    for rc, (gno, stmt, change) in zip(decoded, model):
        names = [c.name for c in stmt.table.columns]
        assert rc.gtid.endswith(f":{gno}") and rc.op == stmt.kind
        for name, value in (rc.after or {}).items():
            assert _same(value, change.after[names.index(name)])
    manifest = json.loads((out / "manifest.json").read_text())
    replayed, _ = _replay(out, manifest)
    for path in sorted((out / "truth").rglob("*.jsonl")):
        assert replayed[f"{path.parent.name}/{path.stem}"] == path.read_text(encoding="utf-8").splitlines()


def test_partial_share_zero_logs_whole_documents_in_update_rows_events(tmp_path):
    config = _config(days=1, scale=0.001, partial_share=0.0, tables=("products", "orders"))
    generate(tmp_path, config)
    types = Counter(e.header.type_code for f in _binlogs(tmp_path) for e in read_events(open(f, "rb")))
    assert types[C.PARTIAL_UPDATE_ROWS_EVENT] == 0 and types[C.UPDATE_ROWS_EVENT] > 10
    decoded = _decoded(tmp_path)
    assert all(rc.diffs is None for rc in decoded)
    assert len(decoded) == len(_model(config))


def test_generate_cli_days_end_yesterday_unless_a_start_is_given(tmp_path):
    """A demo whose data is recent: by default the days end yesterday (UTC), so today's scheduled DAG run finds
    them; an explicit --start keeps reproducible dates."""
    import datetime as dt
    import json

    from binlake.cli.generate_cmd import default_start

    assert default_start(2, dt.date(2024, 3, 3)) == dt.date(2024, 3, 1)
    assert cli_main(["generate", "--out", str(tmp_path / "recent"), "--days", "2", "--scale", "0.001"]) == 0
    days = [d["date"] for d in json.loads((tmp_path / "recent" / "manifest.json").read_text())["days"]]
    today = dt.datetime.now(dt.timezone.utc).date()
    assert days in (
        [(today - dt.timedelta(days=n)).isoformat() for n in (2, 1)],
        [(today - dt.timedelta(days=n)).isoformat() for n in (3, 2)],
    )  # midnight passed meanwhile
    assert (
        cli_main(
            ["generate", "--out", str(tmp_path / "fixed"), "--days", "2", "--scale", "0.001", "--start", "2024-03-01"]
        )
        == 0
    )
    days = [d["date"] for d in json.loads((tmp_path / "fixed" / "manifest.json").read_text())["days"]]
    assert days == ["2024-03-01", "2024-03-02"]
