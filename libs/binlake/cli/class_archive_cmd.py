"""``python -m binlake.cli.class_archive_cmd [--if-stale]``: write the Spark driver's class archive
(:mod:`binlake.lake.class_archive`) from a small generated day through ``binlake run --validate``; what
``scripts/setup.sh`` runs."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from pathlib import Path

from binlake.errors import BinlakeError
from binlake.lake.class_archive import PROJECT_ROOT, archive_paths, is_current, stamp


class ClassArchiveError(BinlakeError):
    """The class archive could not be written."""


def write(root: Path = PROJECT_ROOT) -> Path:
    """Write the archive: a JVM runs a small generated day through ``binlake run --validate`` (every stage's
    classes), then exits, writing what it loaded; the archive replaces the old one only when complete. What the
    run prints goes to ``build.log`` beside it."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from binlake.cli import main as binlake
    from binlake.lake.session import DRIVER_GC, build_session

    archive, stamp_file, conf_dir = archive_paths(root)
    writer_options = f"-Xlog:cds=off {DRIVER_GC}"  # the collector binlake's JVMs run
    conf_dir.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(".jsa.partial")
    partial.unlink(missing_ok=True)
    log = archive.with_name("build.log")
    with tempfile.TemporaryDirectory(prefix="binlake-cds-") as scratch, open(log, "w") as out:
        sample, lake = os.path.join(scratch, "sample"), os.path.join(scratch, "lake")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            if binlake(["generate", "--out", sample, "--seed", "3", "--days", "1", "--scale", "0.005"]) != 0:
                raise ClassArchiveError(f"binlake generate failed (see {log})")
            os.environ["SPARK_CONF_DIR"] = str(conf_dir)
            try:
                build_session(
                    "binlake-class-archive",
                    conf={"spark.driver.defaultJavaOptions": f"-XX:ArchiveClassesAtExit={partial} {writer_options}"},
                    log_file=os.path.join(scratch, "spark.log"),
                )
            finally:
                os.environ.pop("SPARK_CONF_DIR", None)
            argv = ["run", "--landing", os.path.join(sample, "landing"), "--lake", lake, "--engine", "spark"]
            if binlake([*argv, "--validate"]) != 0:
                raise ClassArchiveError(f"the archive's sample run failed (see {log})")
        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()
        gateway = SparkContext._gateway
        assert gateway is not None
        process = gateway.proc
        try:
            gateway.jvm.java.lang.System.exit(0)  # an orderly exit is when the JVM writes the archive
        except Exception:  # noqa: BLE001 - the call's connection ends with the JVM
            pass
        process.wait()
    if not partial.is_file():
        raise ClassArchiveError(f"the JVM wrote no class archive at {partial}")
    partial.replace(archive)
    stamp_file.write_text(stamp(root))
    return archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m binlake.cli.class_archive_cmd",
        description="Write the Spark driver's class archive (.jars/cds/spark.jsa) that binlake's JVMs start from.",
    )
    parser.add_argument("--if-stale", action="store_true", help="only when the JDK or a jar changed since")
    args = parser.parse_args(argv)
    if args.if_stale and is_current():
        return 0
    print("class archive: writing .jars/cds/spark.jsa from a small sample run (about a minute)", flush=True)
    try:
        archive = write()
    except ClassArchiveError as exc:
        print(f"class archive: not written: {exc}; Spark starts without it (slower)", file=sys.stderr)
        return 1
    print(f"class archive: wrote {archive} ({archive.stat().st_size >> 20} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
