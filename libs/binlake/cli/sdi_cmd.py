"""``binlake sdi``: print the SDI records of .ibd / .sdi / ibd2sdi files, or diff two table definitions."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from binlake.errors import BinlakeError

EPILOG = """\
FILE is a MySQL 8 tablespace (.ibd), the output of ibd2sdi, or one SDI JSON document (.sdi file); a folder is
searched for .ibd, .sdi and .json files.

Output formats:
  ibd2sdi  one JSON array per file in ibd2sdi's layout; each "object" is the SDI exactly as stored
           (add --pretty for ibd2sdi's default pretty-printed layout)
  jsonl    one line per record: {"file": ..., "type": T, "id": ID, "sdi": <the stored SDI, on one line>}

`binlake sdi diff OLD NEW` prints the schema diff of the table definitions in two files (tables are paired by
schema and name, or taken as a pair when each file holds one table). Exit status: 0 equal, 1 different.

examples:
  binlake sdi /var/lib/mysql/shop/orders.ibd
  binlake sdi --format jsonl /backups/datadir/shop
  binlake sdi diff orders-2024-01.ibd orders-2024-06.ibd
"""


class UsageError(BinlakeError):
    """Bad command-line input; the message says what to fix."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sdi",
        help="print SDI (table definitions) from .ibd/.sdi/ibd2sdi files, or diff two versions",
        description="Read MySQL 8 serialized dictionary information (SDI) without a server: from tablespaces "
        "(.ibd), ibd2sdi output or .sdi files. `binlake sdi diff OLD NEW` compares two definitions.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="files or folders (or: diff OLD NEW)")
    parser.add_argument("--format", choices=("ibd2sdi", "jsonl"), default="ibd2sdi", help="output format")
    parser.add_argument("--pretty", action="store_true", help="pretty-print objects as ibd2sdi does by default")
    parser.add_argument("--no-check", action="store_true", help="do not verify page checksums (like ibd2sdi -n)")
    parser.add_argument("--json", action="store_true", help="diff: print the structured diff as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.files[0] == "diff":
        if len(args.files) != 3:
            raise UsageError("usage: binlake sdi diff OLD NEW (two files; to read a file named 'diff', write ./diff)")
        return run_diff(args.files[1], args.files[2], args.json, not args.no_check)
    from binlake.sdi.model import load_json
    from binlake.sdi.readers import iter_sdi_files, read_entries
    from binlake.sdi.writer import to_ibd2sdi

    out = sys.stdout
    for path in iter_sdi_files(args.files):
        entries = read_entries(path, verify_checksums=not args.no_check)
        # both formats embed the stored text as JSON: it must be JSON, or the command fails
        docs = [load_json(e.text, f"{path}: SDI record (type {e.sdi_type}, id {e.sdi_id})") for e in entries]
        if args.format == "jsonl":  # serialized again: a stored text may span lines (a pretty .sdi file)
            for e, doc in zip(entries, docs):
                out.write(
                    json.dumps(
                        {"file": str(path), "type": e.sdi_type, "id": e.sdi_id, "sdi": doc},
                        ensure_ascii=False,
                        separators=(",", ":"),
                    )
                    + "\n"
                )
        else:
            out.write(
                to_ibd2sdi(
                    ((e.sdi_type, e.sdi_id if e.sdi_id is not None else 0, e.text) for e in entries), pretty=args.pretty
                )
            )
    return 0


def run_diff(old_path: str, new_path: str, as_json: bool, verify: bool) -> int:
    from binlake.sdi.compare import diff_tables
    from binlake.sdi.readers import read_entries

    def tables(path: str) -> dict[tuple[str, str], Any]:
        found = {}
        for e in read_entries(path, verify_checksums=verify):
            t = e.document().table
            if t is not None:
                found[(t.schema_ref, t.name)] = t
        if not found:
            raise UsageError(f"{path}: holds no Table SDI to compare")
        return found

    old, new = tables(old_path), tables(new_path)
    if len(old) == 1 and len(new) == 1:
        pairs = [(next(iter(old.values())), next(iter(new.values())))]
        only_old: list[tuple[str, str]] = []
        only_new: list[tuple[str, str]] = []
    else:
        pairs = [(old[k], new[k]) for k in old if k in new]
        only_old = [k for k in old if k not in new]
        only_new = [k for k in new if k not in old]
    diffs = [diff_tables(a, b) for a, b in pairs]
    if as_json:
        json.dump(
            {
                "diffs": [d.to_dict() for d in diffs],
                "only_in_old": [".".join(k) for k in only_old],
                "only_in_new": [".".join(k) for k in only_new],
            },
            sys.stdout,
            indent=2,
            ensure_ascii=False,
        )
        sys.stdout.write("\n")
    else:
        for d in diffs:
            sys.stdout.write(d.render())
        for k in only_old:
            sys.stdout.write(f"{'.'.join(k)}: only in {old_path}\n")
        for k in only_new:
            sys.stdout.write(f"{'.'.join(k)}: only in {new_path}\n")
    return 0 if all(d.equal for d in diffs) and not only_old and not only_new else 1
