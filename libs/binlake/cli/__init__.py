"""The ``binlake`` command line.

Every module in this package that defines ``register(subparsers)`` adds its own sub-commands; this file only
discovers them, parses ``argv`` and turns a :class:`~binlake.errors.BinlakeError` into one line on stderr and
the error's exit code. Command modules import heavy libraries (Spark, Airflow) inside their handlers so that
``binlake --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from typing import Sequence

from binlake import __version__
from binlake.errors import BinlakeError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="binlake",
        description="Read MySQL 8 / MariaDB binary logs offline and load their changes into Delta tables.",
    )
    parser.add_argument("--version", action="version", version=f"binlake {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BinlakeError as exc:
        print(f"binlake: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # e.g. `binlake rows FILE | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("binlake: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
