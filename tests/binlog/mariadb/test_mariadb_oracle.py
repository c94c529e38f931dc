"""binlake against a real MariaDB 10.11: its row changes equal the server's SELECT and mariadb-binlog's decoding.

One private server per binlog setting runs the workload of ``workload.py`` (every column type, inserts,
updates incl. primary-key changes, deletes, multi-row statements, a multi-table transaction, an ALTER TABLE
mid-stream, a second binlog file). Then:

- the final state rebuilt from ``binlake rows --format jsonl`` equals ``SELECT *`` of every table;
- every row of every rows event equals what ``mariadb-binlog -vv --base64-output=decode-rows`` printed;
- ``binlake events --format jsonl`` lists the same events (position, type, timestamp, server id, size);
- and, so that the oracles themselves are trusted, the state rebuilt from mariadb-binlog equals SELECT.
"""

from __future__ import annotations

import collections
import re

import pytest

from tests.binlog.mariadb import oracle
from tests.binlog.mariadb.workload import T_OLD_TIME, final_tables
from tests.mariadb_server import BinlogSettings, require_mariadb

pytestmark = [pytest.mark.mariadb, pytest.mark.slow]

VARIANTS = {
    "image-FULL-metadata-FULL": BinlogSettings(row_image="FULL", row_metadata="FULL"),
    "image-MINIMAL-metadata-FULL": BinlogSettings(row_image="MINIMAL", row_metadata="FULL"),
    "image-NOBLOB-metadata-FULL": BinlogSettings(row_image="NOBLOB", row_metadata="FULL"),
    "image-FULL-metadata-MINIMAL": BinlogSettings(row_image="FULL", row_metadata="MINIMAL"),
    "image-MINIMAL-metadata-MINIMAL": BinlogSettings(row_image="MINIMAL", row_metadata="MINIMAL"),
    "image-MINIMAL-metadata-NO_LOG": BinlogSettings(row_image="MINIMAL", row_metadata="NO_LOG"),
    "checksum-NONE": BinlogSettings(checksum="NONE"),
}

# Names binlake may give the MariaDB event types (MySQL's enum has none of them); the rest are MySQL's names.
TYPE_NAME_ALIASES = {
    160: {"ANNOTATE_ROWS_EVENT", "MARIADB_ANNOTATE_ROWS_EVENT"},
    161: {"BINLOG_CHECKPOINT_EVENT", "MARIADB_BINLOG_CHECKPOINT_EVENT"},
    162: {"GTID_EVENT", "MARIADB_GTID_EVENT"},
    163: {"GTID_LIST_EVENT", "MARIADB_GTID_LIST_EVENT"},
}


COLUMN_TYPE_RE = re.compile(r" \[([A-Z][A-Z0-9]*)")  # the SQL type at the start of a diff line's [column type]


@pytest.fixture(scope="module", params=list(VARIANTS), ids=list(VARIANTS))
def workload_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> oracle.WorkloadRun:
    require_mariadb()
    return oracle.run_on_fresh_server(tmp_path_factory.mktemp(request.param), VARIANTS[request.param])


def _report(title: str, diffs: list[str], limit: int = 60) -> str:
    by_kind = collections.Counter(m.group(1) for m in map(COLUMN_TYPE_RE.search, diffs) if m)
    head = "\n".join(diffs[:limit])
    more = f"\n... and {len(diffs) - limit} more" if len(diffs) > limit else ""
    kinds = f"\nby column type: {dict(by_kind)}" if by_kind else ""
    return f"{title}: {len(diffs)} differences{kinds}\n{head}{more}"


def _tool_decodable_files(run: oracle.WorkloadRun) -> list[str]:
    """Files mariadb-binlog -vv decodes completely; it may fail only on the file holding T_OLD_TIME's rows."""
    decodable = [name for name in run.file_names if run.tool[name].returncode == 0]
    for name in set(run.file_names) - set(decodable):
        listed = {e.text.split(b"`")[3].decode() for e in run.tool_events[name].events if e.type_code == 19}
        assert listed == {T_OLD_TIME.name}, (
            f"mariadb-binlog -vv failed on {name} ({run.tool[name].stderr.strip()}), which holds rows of {listed}"
        )
    assert decodable, "mariadb-binlog -vv decoded none of the files"
    return decodable


def test_oracles_agree_mariadb_binlog_rebuilds_the_select(workload_run: oracle.WorkloadRun) -> None:
    decodable = _tool_decodable_files(workload_run)
    changes = [c for c in oracle.tool_changes(workload_run) if c.file in decodable]
    assert len(changes) > 50, f"the workload should print dozens of row changes, mariadb-binlog printed {len(changes)}"
    tables = [name for name in final_tables() if name != T_OLD_TIME.name]
    diffs = oracle.compare_states(workload_run.select, oracle.reconstruct(changes), tables, "mariadb-binlog")
    assert not diffs, _report("state rebuilt from mariadb-binlog -vv vs SELECT", diffs)


def test_binlake_rows_rebuild_the_select(workload_run: oracle.WorkloadRun) -> None:
    changes, problems = oracle.binlake_changes(workload_run)
    tables = list(final_tables())  # t_old_time too: decoded with its fractional digits from --schema
    diffs = problems + oracle.compare_states(workload_run.select, oracle.reconstruct(changes), tables, "binlake")
    assert not diffs, _report("state rebuilt from binlake rows vs SELECT", diffs)


def test_binlake_rows_equal_mariadb_binlog(workload_run: oracle.WorkloadRun) -> None:
    decodable = _tool_decodable_files(workload_run)
    # mariadb-binlog prints the rows of a statement spanning several rows events as one block: rows are compared
    # by (file, statement's first rows event, index within the statement)
    groups = oracle.statement_groups(workload_run)
    expected = {(c.file, c.pos, c.row): c for c in oracle.tool_changes(workload_run) if c.file in decodable}
    changes, problems = oracle.binlake_changes(workload_run)
    actual = oracle.by_statement((c for c in changes if c.file in decodable), groups)
    diffs = list(problems)
    for key in sorted(set(expected) ^ set(actual), key=str):
        side = "only mariadb-binlog" if key in expected else "only binlake"
        diffs.append(f"{key[0]}:{key[1]} row {key[2]}: {side} has this row change")
    columns = {name: {c.name: c for c in t.columns} for name, t in final_tables().items()}
    for key in sorted(set(expected) & set(actual)):
        want, got = expected[key], actual[key]
        where = f"{key[0]}:{key[1]} statement row {key[2]} {want.table}"
        for attr in ("table", "op", "gtid"):
            if getattr(want, attr) != getattr(got, attr):
                diffs.append(
                    f"{where}: {attr} mariadb-binlog {getattr(want, attr)!r} vs binlake {getattr(got, attr)!r}"
                )
        for image in ("before", "after"):
            w, g = getattr(want, image), getattr(got, image)
            if set(w) != set(g):
                diffs.append(f"{where} {image}: columns mariadb-binlog {sorted(w)} vs binlake {sorted(g)}")
            for name in sorted(set(w) & set(g)):
                if w[name] != g[name]:
                    col = columns[want.table].get(name)
                    sql = col.sql[:30] if col else "added column"
                    diffs.append(
                        f"{where} {image}.{name} [{sql}]: mariadb-binlog {w[name]!r:.120} vs binlake {g[name]!r:.120}"
                    )
    assert not diffs, _report("binlake rows vs mariadb-binlog -vv", diffs)


def test_binlake_events_equal_mariadb_binlog(workload_run: oracle.WorkloadRun) -> None:
    diffs = []
    for path in workload_run.files:
        listing = workload_run.tool_events[path.name]
        assert listing.returncode == 0, f"mariadb-binlog failed to list {path.name}: {listing.stderr}"
        want = [(e.pos, e.type_code, e.timestamp, e.server_id, e.size) for e in listing.events]
        try:
            records = [
                r for r in oracle.run_binlake("events", str(path), "--format", "jsonl") if r.get("payload_pos") is None
            ]
        except AssertionError as exc:  # one file failing should not hide what the others show
            diffs.append(str(exc))
            continue
        got = [tuple(r.get(k) for k in ("pos", "type_code", "timestamp", "server_id", "size")) for r in records]
        if want != got:
            w, g = set(want), set(got)
            diffs += [
                f"{path.name}: only mariadb-binlog lists (pos, type_code, timestamp, server_id, size) {e}"
                for e in want
                if e not in g
            ]
            diffs += [
                f"{path.name}: only binlake lists (pos, type_code, timestamp, server_id, size) {e}"
                for e in got
                if e not in w
            ]
            if w == g:
                diffs.append(f"{path.name}: same events in a different order")
        names = {e.type_code: e.type_name for e in listing.events}
        for r in records:
            allowed = TYPE_NAME_ALIASES.get(r.get("type_code"), {names.get(r.get("type_code"))})
            if r.get("type") not in allowed:
                diffs.append(
                    f"{path.name}:{r.get('pos')}: type {r.get('type')!r} for code {r.get('type_code')}, "
                    f"expected one of {sorted(n for n in allowed if n)}"
                )
    assert not diffs, _report("binlake events vs mariadb-binlog", diffs)


def test_workload_covers_every_table_and_operation(workload_run: oracle.WorkloadRun) -> None:
    """The oracles above only prove something if the binlog really holds all of this."""
    decodable = _tool_decodable_files(workload_run)
    changes = [c for c in oracle.tool_changes(workload_run) if c.file in decodable]
    ops = collections.Counter((c.table, c.op) for c in changes)
    for name in final_tables():
        if name == T_OLD_TIME.name:
            continue
        assert ops[(name, "insert")] >= 3, f"{name}: too few inserts in the binlog: {ops}"
    assert any(c.op == "update" and c.before.get("id") != c.after.get("id", c.before.get("id")) for c in changes)
    assert {op for (_, op) in ops} == {"insert", "update", "delete"}
    assert len(workload_run.files) == 2 and len(workload_run.select[T_OLD_TIME.name]) == 2
    gtids = {c.gtid for c in changes}
    assert None not in gtids and all(g.startswith("0-1-") for g in gtids), gtids
