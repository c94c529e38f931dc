"""``binlake events|rows|show FILE``: list events, row changes, or ``mysqlbinlog -v``-like text of a binlog.

Machine-readable output (``--format jsonl``) is an interface: one JSON object per line, field names stable.
Errors print one line (file, offset, event type, expected vs found) and exit non-zero; a file whose last event
is still being written exits 3 (or 0 with ``--allow-incomplete``, after a note on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Iterator

EXIT_INCOMPLETE = 3
MAX_DECLARED_SIZE = (1 << 32) - 1  # an event header's 4-byte size field


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="binlog file path or URI (file://...)")
    p.add_argument(
        "--start-position",
        type=int,
        default=None,
        metavar="POS",
        help="start at this event offset (after reading the FORMAT_DESCRIPTION_EVENT)",
    )
    p.add_argument(
        "--no-verify-checksum", dest="verify_checksum", action="store_false", help="do not verify event CRC32 checksums"
    )
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="a cut-short final event (file still being written) ends the output with exit 0",
    )
    p.add_argument(
        "--max-event-size",
        type=_size,
        default=None,
        metavar="BYTES",
        help="largest event accepted, events inside compressed transactions included (like the "
        "server's max_allowed_packet; default 1 GiB plus headers)",
    )
    p.add_argument(
        "--schema",
        action="append",
        default=[],
        metavar="PATH",
        help="table definitions for TABLE_MAPs that lack them (binlog_row_metadata=MINIMAL/NO_LOG: "
        "names, signedness, charsets; MariaDB mysql56_temporal_format=OFF: fractional digits): "
        "MySQL SDI (.ibd, .sdi, ibd2sdi output) or a JSON column list "
        '{"tables": [{"db": ..., "table": ..., "columns": ["id", {"name": "t", "fsp": 3}, '
        "...]}]} (column keys: name, unsigned, charset, collation_id, fsp, enum, set); files or "
        "folders, repeatable",
    )


def _size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of bytes: {text!r}") from None
    if value < 19:
        raise argparse.ArgumentTypeError(f"must be at least 19 (an event header): {value}")
    if value > MAX_DECLARED_SIZE:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_DECLARED_SIZE} (the largest size an event header declares): {value}"
        )
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "events",
        help="list the events of a binlog file",
        description="One line or JSON object per event, in file order; events inside a "
        "TRANSACTION_PAYLOAD follow it with payload_pos = its pos.",
    )
    _common(p)
    p.add_argument("--format", choices=("jsonl", "text"), default="text")
    p.set_defaults(func=cmd_events)

    p = subparsers.add_parser(
        "rows",
        help="list the row changes of a binlog file",
        description="One JSON object per changed row: file, pos, row, gtid, db, table, op, "
        "before, after (and diffs for partial JSON updates). Every line is "
        "valid UTF-8: text that is not valid in its charset (e.g. a charset "
        "unknown with binlog_row_metadata=MINIMAL/NO_LOG, read as UTF-8) comes "
        'out as {"hex": ...} of its bytes, like binary values; pass --schema '
        "to decode it with its real charset.",
    )
    _common(p)
    p.add_argument("--format", choices=("jsonl",), default="jsonl")
    p.set_defaults(func=cmd_rows)

    p = subparsers.add_parser(
        "show",
        help="print a binlog like mysqlbinlog (-v: rows as pseudo-SQL)",
        description="Events as text in the manner of mysqlbinlog; -v adds the row changes "
        "as ### pseudo-SQL, partial JSON updates as JSON_REPLACE/JSON_INSERT/"
        "JSON_ARRAY_INSERT/JSON_REMOVE calls (WL#2955 FR7).",
    )
    _common(p)
    p.add_argument("-v", "--verbose", action="count", default=0, help="print row changes as pseudo-SQL")
    p.set_defaults(func=cmd_show)


def _schema(args: argparse.Namespace):
    """The ``--schema`` tables (``binlake.sdi.schema_files``), or None."""
    from binlake.sdi.schema_files import load_schema_provider

    return load_schema_provider(args.schema) if args.schema else None


def _open(args: argparse.Namespace, decode_rows: bool = True, provider=None):
    from binlake.binlog import open_binlog
    from binlake.binlog.reader import MAX_EVENT_SIZE

    if provider is None:
        provider = _schema(args)
    return open_binlog(
        args.file,
        verify_checksum=args.verify_checksum,
        start_position=args.start_position,
        stop_at_incomplete=args.allow_incomplete,
        decode_rows=decode_rows,
        schema_provider=provider,
        max_event_size=args.max_event_size or MAX_EVENT_SIZE,
    )


def _utf8_json(record: dict[str, Any]) -> str:
    """One JSON line that is valid UTF-8: names (db, table, column, query text) that hold undecodable bytes as
    surrogate escapes are written as \\u escapes instead of raw bytes."""
    try:
        line = json.dumps(record, ensure_ascii=False, allow_nan=False)  # never NaN/Infinity: they are not JSON
    except ValueError as exc:
        from binlake.binlog.errors import CorruptEventError

        raise CorruptEventError(
            f"a value has no JSON form ({exc})", file=record.get("file"), offset=record.get("pos")
        ) from None
    if not line.isascii():
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            line = json.dumps(record, allow_nan=False)
    return line


def _finish(binlog: Any, out: Any) -> int:
    out.flush()
    stats = binlog.stats
    if stats.unknown_total:
        kinds = ", ".join(f"{code}: {n}" for code, n in sorted(stats.unknown.items()))
        print(
            f"binlake: note: {stats.unknown_total} event(s) of unknown type kept undecoded ({kinds})", file=sys.stderr
        )
    for (db, table), notes in sorted(binlog.context.assumptions.items()):
        print(f"binlake: note: `{db}`.`{table}`: " + "; ".join(notes), file=sys.stderr)
    if stats.incomplete is not None:
        print(f"binlake: note: {stats.incomplete}", file=sys.stderr)
    return 0


def _emit(lines: Iterator[str]) -> None:
    write = sys.stdout.write
    for line in lines:
        write(line)
        write("\n")


def cmd_events(args: argparse.Namespace) -> int:
    from binlake.binlog.render import event_line, event_record

    binlog = _open(args, decode_rows=False)  # listing events needs no row layouts
    if args.format == "jsonl":
        _emit(_utf8_json(event_record(ev)) for ev in binlog)
    else:
        _emit(event_line(ev) for ev in binlog)
    return _finish(binlog, sys.stdout)


def cmd_rows(args: argparse.Namespace) -> int:
    from binlake.binlog.native import cmd_rows as native_rows

    provider = _schema(args)
    done = native_rows(args, provider)  # the native core writes the same lines (binlake.binlog.native)
    if done is not None:
        return done
    from binlake.binlog.constants import event_type_name
    from binlake.binlog.errors import BinlogError
    from binlake.binlog.render import json_diffs, json_image

    binlog = _open(args, provider=provider)

    def records() -> Iterator[str]:
        for c in binlog.row_changes():
            try:
                rec = {
                    "file": c.file,
                    "pos": c.pos,
                    "row": c.row,
                    "gtid": c.gtid,
                    "db": c.db,
                    "table": c.table,
                    "op": c.op,
                    "before": json_image(c.before),
                    "after": json_image(c.after),
                }
                if c.diffs is not None:
                    rec["diffs"] = json_diffs(c.diffs)
            except BinlogError as exc:  # values decoded on demand (JSON): the error gets the row's place
                exc.message += f" (row {c.row} of `{c.db}`.`{c.table}`)"
                raise exc.located(file=c.file, offset=c.pos, event_type=event_type_name(c.event_type)) from None
            yield _utf8_json(rec)

    _emit(records())
    return _finish(binlog, sys.stdout)


def cmd_show(args: argparse.Namespace) -> int:
    from binlake.binlog.errors import BinlogError
    from binlake.binlog.events import RowsEvent
    from binlake.binlog.render import show_lines

    binlog = _open(args)

    def lines() -> Iterator[str]:
        for ev in binlog:
            layout = binlog.context.tables.get(ev.body.table_id) if isinstance(ev.body, RowsEvent) else None
            try:
                text = show_lines(ev, layout, args.verbose)
            except BinlogError as exc:  # values decoded on demand (JSON): the error gets the event's place
                raise exc.located(
                    file=binlog.name,
                    offset=ev.payload_pos if ev.payload_pos is not None else ev.pos,
                    event_type=ev.type_name,
                ) from None
            yield from text

    _emit(lines())
    return _finish(binlog, sys.stdout)
