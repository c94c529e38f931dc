"""Run one fuzz target under atheris (libFuzzer): ``python -m tests.fuzz.run TARGET CORPUS_DIR [libFuzzer flags]``.

The target's seeds are written into CORPUS_DIR first. libFuzzer exits non-zero and writes the crashing input
(``-artifact_prefix``) when a target raises anything but binlake's typed errors.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    import atheris

    target_name, corpus = argv[1], Path(argv[2])
    with atheris.instrument_imports(include=["binlake"]):
        import binlake.binlog.api
        import binlake.binlog.render
        import binlake.mysqljson
        import binlake.sdi.readers
        import binlake.snapshot.take
        import binlake.transport.client  # noqa: F401
    from tests.fuzz.targets import TARGETS, seeds

    corpus.mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(seeds(target_name)):
        (corpus / f"seed-{i:04d}").write_bytes(seed)
    target = TARGETS[target_name]
    atheris.Setup([argv[0], str(corpus), *argv[3:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
