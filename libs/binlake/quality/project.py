"""The committed Great Expectations project in ``expectations/``: the suites' JSON, written from the factories.

    python -m binlake.quality.project [--sdi DIR ...] [--root expectations]

writes ``expectations/gx/`` (a GX file context, analytics off, ``uncommitted/`` git-ignored) holding the
pipeline suites and the suite of every table definition found in ``--sdi`` (default: the sample ``shop``
schema of ``binlake generate``). Expectation ids are derived from the suite and the expectation's arguments,
so writing again without a change leaves the files as they are. Runs (``validate_lake``) build the same
suites from the lake's own schema registry; this project is what people read, review and diff.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import uuid
from pathlib import Path
from typing import Iterable, Optional, Sequence

from binlake.quality import suites as S
from binlake.sdi.model import Table

PROJECT_NAMESPACE = uuid.UUID("5b1c55a2-6a55-4c5e-9c1e-0b1a4e5d0001")
ANALYTICS_OFF = "analytics_enabled: false\n"


def stabilize_ids(path: Path) -> None:
    """Replace the random ids GX gave a stored suite by ids derived from the suite name and each expectation's
    type and arguments, so that writing an unchanged suite again leaves its file as it was."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["id"] = str(uuid.uuid5(PROJECT_NAMESPACE, doc["name"]))
    for e in doc["expectations"]:
        key = f"{doc['name']}|{e['type']}|{json.dumps(e['kwargs'], sort_keys=True)}"
        e["id"] = str(uuid.uuid5(PROJECT_NAMESPACE, key))
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def sample_tables() -> list[Table]:
    """The newest definition of each table of ``binlake generate``'s sample schema."""
    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate

    with tempfile.TemporaryDirectory(prefix="binlake-sdi-") as tmp:
        generate(tmp, GenerateConfig(days=1, scale=0.001))
        return tables_in([Path(tmp, "sdi")])


def tables_in(paths: Iterable[Path]) -> list[Table]:
    from binlake.sdi.registry import SchemaRegistry

    reg = SchemaRegistry()
    reg.snapshot(paths, dt.datetime(1970, 1, 1))
    return [reg.versions(db, name)[-1].table for db, name in reg.tables()]


def write_project(root: Path, tables: Sequence[Table], max_quarantine_share: float = 0.0) -> list[str]:
    """(Re)write ``root/gx`` with the pipeline suites and one suite per table; returns the suite names."""
    import great_expectations as gx

    gx_dir = root / "gx"
    for old in (gx_dir / "expectations").rglob("*.json"):
        old.unlink()  # suites of tables that went away go too
    context = gx.get_context(mode="file", project_root_dir=str(root))
    config = gx_dir / "great_expectations.yml"
    text = config.read_text(encoding="utf-8")
    if ANALYTICS_OFF not in text:
        config.write_text(ANALYTICS_OFF + text, encoding="utf-8")
    names = []
    for suite in S.pipeline_suites(max_quarantine_share) + [S.table_suite(t) for t in tables]:
        context.suites.add_or_update(suite)
        names.append(suite.name)
    for path in (gx_dir / "expectations").rglob("*.json"):
        stabilize_ids(path)
    return names


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m binlake.quality.project",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--root", default="expectations", help="the GX project root (default: expectations)")
    parser.add_argument(
        "--sdi",
        action="append",
        metavar="DIR",
        help="SDI files or folders (.sdi/.ibd/ibd2sdi); default: the generator's sample schema",
    )
    args = parser.parse_args(argv)
    tables = tables_in([Path(p) for p in args.sdi]) if args.sdi else sample_tables()
    for name in write_project(Path(args.root), tables):
        print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
