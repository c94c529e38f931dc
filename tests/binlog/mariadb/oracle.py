"""Run the workload on a private MariaDB and gather the three views the tests compare.

- the server's ``SELECT *`` of every table at the end (:func:`select_state`),
- ``mariadb-binlog -vv`` row changes, parsed (:func:`tool_changes`),
- ``binlake rows FILE --format jsonl`` row changes (:func:`binlake_changes`),

each normalised per column kind (``normalize.py``), plus the final state reconstructed from a list of row
changes (:func:`reconstruct`): apply inserts, updates (also of the primary key; partial after-images of
MINIMAL/NOBLOB merge into the row) and deletes by primary key ``id``, in binlog order.
"""

from __future__ import annotations

import collections
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from tests.binlog.mariadb import normalize
from tests.binlog.mariadb.mariadb_binlog_text import ToolOutput, run_mariadb_binlog
from tests.binlog.mariadb.workload import (
    ADDED_COLUMN,
    DB,
    T_OLD_TIME,
    Column,
    WorkloadResult,
    final_tables,
    run_workload,
)
from tests.mariadb_server import BinlogSettings, MariaDBServer

State = dict[str, dict[Any, dict[str, Any]]]  # table -> id -> column -> comparable value


@dataclass(frozen=True, slots=True)
class Change:
    """One row change, values already in comparable form and keyed by column name."""

    file: str
    pos: int
    row: int
    gtid: str | None
    table: str
    op: str
    before: dict[str, Any]
    after: dict[str, Any]


@dataclass
class WorkloadRun:
    settings: BinlogSettings
    files: list[Path]
    workload: WorkloadResult
    select: State
    tool: dict[str, ToolOutput] = field(default_factory=dict)  # file name -> parsed -vv output
    tool_events: dict[str, ToolOutput] = field(default_factory=dict)  # file name -> parsed listing (no -v)

    @property
    def file_names(self) -> list[str]:
        return [f.name for f in self.files]

    def columns_at(self, table: str, file: str, pos: int) -> tuple[Column, ...]:
        return self.workload.columns_at(table, file, pos, self.file_names)


def run_on_fresh_server(basedir: Path, settings: BinlogSettings) -> WorkloadRun:
    with MariaDBServer(basedir, settings) as server:
        workload = run_workload(server)
        state = select_state(server)
        files = server.binlog_files()
    # stopped: every file is complete (the last one ends with a STOP_EVENT); only the binlogs are kept
    shutil.rmtree(server.datadir, ignore_errors=True)
    run = WorkloadRun(settings, files, workload, state)
    run.tool = {f.name: run_mariadb_binlog(f) for f in files}
    run.tool_events = {f.name: run_mariadb_binlog(f, verbose=False) for f in files}
    return run


def select_state(server: MariaDBServer) -> State:
    state: State = {}
    conn = server.connect(DB)
    try:
        cur = conn.cursor()
        for name, table in final_tables().items():
            cur.execute(f"SELECT {', '.join('`' + n + '`' for n in table.names)} FROM `{name}`")
            rows = {}
            for values in cur.fetchall():
                row = {c.name: normalize.from_select(c, v) for c, v in zip(table.columns, values)}
                rows[row["id"]] = row
            state[name] = rows
    finally:
        conn.close()
    return state


def _column_by_key(run: WorkloadRun, table: str, file: str, pos: int, key: str) -> Column:
    """The workload column a decoded key names: its name, or ``@N`` (1-based TABLE_MAP position)."""
    columns = run.columns_at(table, file, pos)
    if key.startswith("@") and key[1:].isdigit():
        index = int(key[1:]) - 1
        if not 0 <= index < len(columns):
            raise normalize.Mismatch(f"{file}:{pos} {table}: {key} is beyond the table's {len(columns)} columns")
        return columns[index]
    for col in columns:
        if col.name == key:
            return col
    raise normalize.Mismatch(f"{file}:{pos} {table}: no column named {key!r} (columns: {[c.name for c in columns]})")


def tool_changes(run: WorkloadRun) -> list[Change]:
    changes = []
    for file in run.file_names:
        for r in run.tool[file].rows:
            if r.db != DB:
                continue
            images = []
            for image in (r.before, r.after):
                decoded = {}
                for number, printed in image.items():
                    col = _column_by_key(run, r.table, file, r.pos, f"@{number}")
                    decoded[col.name] = normalize.from_tool(col, printed)
                images.append(decoded)
            changes.append(Change(file, r.pos, r.row, r.gtid, r.table, r.op, images[0], images[1]))
    return changes


def statement_groups(run: WorkloadRun) -> dict[tuple[str, int], int]:
    """(file, rows event pos) -> pos of the first rows event of its statement, as mariadb-binlog grouped them."""
    groups = {}
    for file, output in run.tool.items():
        for r in output.rows:
            for pos in r.positions:
                groups[(file, pos)] = r.pos
    return groups


def by_statement(changes: Iterable[Change], groups: dict[tuple[str, int], int]) -> dict[tuple, Change]:
    """Changes keyed (file, statement's first rows event pos, index within the statement), the tool's numbering.

    A change whose event the tool did not print is keyed by its own (file, pos, row) with a marker.
    """
    keyed, counters = {}, collections.Counter()
    for ch in sorted(changes, key=lambda c: (c.file, c.pos, c.row)):
        start = groups.get((ch.file, ch.pos))
        if start is None:
            keyed[(ch.file, ch.pos, ch.row, "not printed by mariadb-binlog")] = ch
            continue
        keyed[(ch.file, start, counters[(ch.file, start)])] = ch
        counters[(ch.file, start)] += 1
    return keyed


def binlake_command() -> list[str]:
    """The ``binlake`` console script next to this interpreter, else the same entry point through ``-c``."""
    script = Path(sys.executable).with_name("binlake")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from binlake.cli import main; sys.exit(main())"]


def run_binlake(*args: str, problems: list[str] | None = None) -> list[dict[str, Any]]:
    """Run ``binlake ARGS`` and parse its JSON lines; a non-zero exit fails with its stderr.

    A line that is not UTF-8 is reported in ``problems`` (if given, else it fails) and parsed with its bad bytes
    as surrogate escapes, so the rest of the comparison still runs.
    """
    result = subprocess.run(binlake_command() + list(args), capture_output=True, check=False)
    if result.returncode != 0:
        raise AssertionError(
            f"binlake {' '.join(args)} exited {result.returncode}: "
            f"{result.stderr.decode(errors='replace').strip()[-2000:]}"
        )
    records = []
    for number, line in enumerate(result.stdout.splitlines(), 1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            message = (
                f"binlake {' '.join(args)}: line {number} is not UTF-8 ({exc}): "
                f"{line[max(0, exc.start - 60) : exc.start + 20]!r}"
            )
            if problems is None:
                raise AssertionError(message) from exc
            problems.append(message)
            text = line.decode("utf-8", "surrogateescape")
        try:
            records.append(json.loads(text))
        except json.JSONDecodeError as exc:
            raise AssertionError(f"binlake {' '.join(args)}: line {number} is not JSON: {line[:200]!r}") from exc
    return records


# MariaDB 5.3's hires TIME/DATETIME/TIMESTAMP (created with mysql56_temporal_format=OFF) have no TABLE_MAP
# metadata (Field_time_hires & co. save none): their fractional digits, hence their byte length, are not in the
# binlog, and mariadb-binlog stops there too. binlake decodes them given the digits by ``--schema``: a column list
# of T_OLD_TIME written from the workload's own definition (the only table given one, so every other table still
# goes through the TABLE_MAP-only path of each metadata setting).
FSP_RE = re.compile(r"^(?:TIME|DATETIME|TIMESTAMP)\((\d)\)")


def old_time_schema(directory: Path) -> Path:
    """A ``binlake --schema`` column list of T_OLD_TIME (names and fractional digits from its SQL types)."""
    columns = []
    for col in T_OLD_TIME.columns:
        match = FSP_RE.match(col.sql)
        columns.append({"name": col.name, "fsp": int(match.group(1)) if match else 0})
    path = directory / "t_old_time.schema.json"
    path.write_text(json.dumps({"tables": [{"db": DB, "table": T_OLD_TIME.name, "columns": columns}]}))
    return path


def binlake_changes(run: WorkloadRun) -> tuple[list[Change], list[str]]:
    """binlake's row changes of the workload database, normalised, and every value that could not be."""
    changes: list[Change] = []
    problems: list[str] = []
    metadata = run.settings.row_metadata
    schema = old_time_schema(run.files[0].parent)
    for path in run.files:
        try:
            records = run_binlake("rows", str(path), "--format", "jsonl", "--schema", str(schema), problems=problems)
        except AssertionError as exc:  # one file failing should not hide what the others show
            problems.append(str(exc))
            continue
        for rec in records:
            if rec.get("db") != DB:
                continue
            missing = {"file", "pos", "row", "gtid", "db", "table", "op", "before", "after"} - set(rec)
            if missing:
                problems.append(f"{path.name}: record without {sorted(missing)}: {json.dumps(rec)[:200]}")
                continue
            if not str(rec["file"]).endswith(path.name):
                problems.append(f"{path.name}:{rec['pos']}: field file is {rec['file']!r}")
            pos, table = rec["pos"], rec["table"]
            images = []
            for image in (rec["before"], rec["after"]):
                decoded = {}
                for key, value in (image or {}).items():
                    try:
                        col = _column_by_key(run, table, path.name, pos, key)
                        decoded[col.name] = normalize.from_binlake(col, value, metadata)
                    except normalize.Mismatch as exc:
                        problems.append(f"{path.name}:{pos} row {rec['row']} {table}.{key}: {exc}")
                images.append(decoded)
            changes.append(Change(path.name, pos, rec["row"], rec["gtid"], table, rec["op"], images[0], images[1]))
    return changes, problems


def reconstruct(changes: Iterable[Change]) -> State:
    state: State = collections.defaultdict(dict)
    for ch in changes:
        rows = state[ch.table]
        if ch.op == "insert":
            rows[ch.after["id"]] = dict(ch.after)
        elif ch.op == "update":
            old = rows.pop(ch.before["id"], None)
            if old is None:
                raise AssertionError(
                    f"{ch.file}:{ch.pos} row {ch.row}: update of {ch.table} id={ch.before['id']} "
                    "which no earlier change inserted"
                )
            old.update(ch.after)
            rows[old["id"]] = old
        elif ch.op == "delete":
            if rows.pop(ch.before["id"], None) is None:
                raise AssertionError(
                    f"{ch.file}:{ch.pos} row {ch.row}: delete of {ch.table} "
                    f"id={ch.before['id']} which no earlier change inserted"
                )
        else:
            raise AssertionError(f"{ch.file}:{ch.pos}: unknown op {ch.op!r}")
    return dict(state)


def _default(col: Column) -> Any:
    return "dflt" if col is ADDED_COLUMN else None


def compare_states(expected: State, actual: State, tables: Iterable[str], label: str) -> list[str]:
    """Differences between the SELECT state and a reconstructed one, one line per value."""
    diffs = []
    definitions = final_tables()
    for name in tables:
        exp_rows, act_rows = expected.get(name, {}), actual.get(name, {})
        if set(exp_rows) != set(act_rows):
            diffs.append(f"{name}: ids SELECT {sorted(exp_rows)} vs {label} {sorted(act_rows)}")
        for key in sorted(set(exp_rows) & set(act_rows)):
            for col in definitions[name].columns:
                want = exp_rows[key][col.name]
                got = act_rows[key].get(col.name, _default(col))
                if want != got:
                    diffs.append(
                        f"{name} id={key} {col.name} [{col.sql[:30]}]: SELECT {want!r:.120} vs {label} {got!r:.120}"
                    )
    return diffs
