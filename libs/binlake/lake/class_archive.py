"""A class-data-sharing archive of the Spark driver's classes, so a JVM binlake starts begins warm.

A cold Spark driver spends seconds loading and verifying the classes of Spark, Delta and their libraries before
its first job (about 4 s of a small ``binlake run`` on two cores). The JDK can map them from an archive written
by an earlier JVM that ran the same work (dynamic AppCDS, JEP 350: ``-XX:ArchiveClassesAtExit`` to write it,
``-XX:SharedArchiveFile`` to use it). ``scripts/setup.sh`` writes one with ``python -m binlake.lake.class_archive``
(a small generated day through ``binlake run --validate``) into ``.jars/cds/``.

The JDK maps an archive only into a JVM whose class path begins like the writer's and holds no non-empty
directory; Spark puts ``$SPARK_CONF_DIR`` first on it. So a JVM uses the archive only when the user has set no
``SPARK_CONF_DIR``: it is then launched with an empty one (``.jars/cds/conf``), and ``spark-submit`` is given the
venv's ``spark-defaults.conf`` as ``--properties-file``. The archive also names the JDK and every jar it was
written with (``stamp``): after a JDK or jar change it is not used until setup writes it again. An unusable
archive only costs the speed-up (``-Xshare:auto``); ``BINLAKE_CLASS_ARCHIVE=off`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from binlake.errors import BinlakeError

PROJECT_ROOT = Path(__file__).resolve().parents[3]  # the checkout, for an editable install (libs/binlake/lake/)
ARCHIVE_DIR = PROJECT_ROOT / ".jars" / "cds"
OFF_VARIABLE = "BINLAKE_CLASS_ARCHIVE"


class ClassArchiveError(BinlakeError):
    """The class archive could not be written."""


@dataclass(frozen=True, slots=True)
class ArchiveLaunch:
    """How to launch a driver JVM that maps the archive: its environment and Java options."""

    conf_dir: str  # an empty SPARK_CONF_DIR
    java_options: str  # for spark.driver.defaultJavaOptions
    properties_file: str | None  # the venv's spark-defaults.conf, for spark-submit (None when it has none)

    @property
    def env(self) -> dict[str, str]:
        return {"SPARK_CONF_DIR": self.conf_dir}


def _spark_home() -> Path:
    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home)
    import pyspark

    return Path(pyspark.__file__).parent


def stamp(root: Path = PROJECT_ROOT) -> str:
    """A digest of what the archive's classes come from: the JDK (``java`` on PATH or ``$JAVA_HOME``, its
    ``release`` file) and the name, size and modification time of every jar of Spark and of ``.jars``."""
    java_home = os.environ.get("JAVA_HOME") or str(Path(os.path.realpath(shutil.which("java") or "java")).parents[1])
    digest = hashlib.sha256(java_home.encode())
    release = Path(java_home, "release")
    digest.update(release.read_bytes() if release.is_file() else b"-")
    for folder in (_spark_home() / "jars", root / ".jars"):
        for jar in sorted(folder.glob("*.jar")):
            info = jar.stat()
            digest.update(f"{jar}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _paths(root: Path) -> tuple[Path, Path, Path]:
    folder = root / ".jars" / "cds"
    return folder / "spark.jsa", folder / "spark.stamp", folder / "conf"


def launch(root: Path = PROJECT_ROOT) -> ArchiveLaunch | None:
    """The launch settings of a driver JVM that maps the checkout's archive; None when there is no up-to-date
    archive, the user set ``SPARK_CONF_DIR``, or ``BINLAKE_CLASS_ARCHIVE=off``."""
    if os.environ.get(OFF_VARIABLE, "").lower() in {"off", "0", "no", "false"} or "SPARK_CONF_DIR" in os.environ:
        return None
    archive, _, conf_dir = _paths(root)
    try:
        if not is_current(root) or any(conf_dir.iterdir()):
            return None
    except OSError:
        return None
    defaults = _spark_home() / "conf" / "spark-defaults.conf"
    return ArchiveLaunch(
        str(conf_dir),
        # the archive's own messages (e.g. a JDK that can not map it) are not the user's concern
        f"-XX:SharedArchiveFile={archive} -Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off",
        str(defaults) if defaults.is_file() else None,
    )


def write(root: Path = PROJECT_ROOT) -> Path:
    """Write the archive: a JVM runs a small generated day through ``binlake run --validate`` (every stage's
    classes), then exits, writing what it loaded; the archive replaces the old one only when complete. What the
    run prints goes to ``build.log`` beside it."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from binlake.cli import main as binlake
    from binlake.lake.session import build_session

    archive, stamp_file, conf_dir = _paths(root)
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
                    conf={"spark.driver.defaultJavaOptions": f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds=off"},
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


def is_current(root: Path = PROJECT_ROOT) -> bool:
    """Whether the checkout's archive was written with the JDK and jars at hand."""
    archive, stamp_file, _ = _paths(root)
    try:
        return archive.is_file() and stamp_file.read_text() == stamp(root)
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m binlake.lake.class_archive",
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
