"""A class-data-sharing archive of the Spark driver's classes, so a JVM binlake starts begins warm.

A cold Spark driver spends seconds loading and verifying the classes of Spark, Delta and their libraries before
its first job (about 4 s of a small ``binlake run`` on two cores). The JDK can map them from an archive written
by an earlier JVM that ran the same work (dynamic AppCDS, JEP 350: ``-XX:ArchiveClassesAtExit`` to write it,
``-XX:SharedArchiveFile`` to use it). ``scripts/setup.sh`` writes one into ``.jars/cds/`` with
``python -m binlake.cli.class_archive_cmd`` (a small generated day through ``binlake run --validate``).

The JDK maps an archive only into a JVM whose class path begins like the writer's and holds no non-empty
directory; Spark puts ``$SPARK_CONF_DIR`` first on it. So a JVM uses the archive only when the user has set no
``SPARK_CONF_DIR``: it is then launched with an empty one (``.jars/cds/conf``), and ``spark-submit`` is given the
venv's ``spark-defaults.conf`` as ``--properties-file``. The archive also names the JDK and every jar it was
written with (``stamp``): after a JDK or jar change it is not used until setup writes it again. An unusable
archive only costs the speed-up (``-Xshare:auto``); ``BINLAKE_CLASS_ARCHIVE=off`` turns it off.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[3]  # the checkout, for an editable install (libs/binlake/lake/)
OFF_VARIABLE = "BINLAKE_CLASS_ARCHIVE"


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


# How binlake lays out a driver's class path; a change makes earlier archives stale (they map only into a JVM whose
# class path begins as the writer's did). 2: Delta's jars first, on spark.driver.extraClassPath.
CLASS_PATH_LAYOUT = b"2"


def stamp(root: Path = PROJECT_ROOT) -> str:
    """A digest of what the archive's classes come from: the JDK (``java`` on PATH or ``$JAVA_HOME``, its
    ``release`` file), :data:`CLASS_PATH_LAYOUT` and the name, size and modification time of every jar of Spark
    and of ``.jars``."""
    java_home = os.environ.get("JAVA_HOME") or str(Path(os.path.realpath(shutil.which("java") or "java")).parents[1])
    digest = hashlib.sha256(java_home.encode() + b"\0" + CLASS_PATH_LAYOUT)
    release = Path(java_home, "release")
    digest.update(release.read_bytes() if release.is_file() else b"-")
    for folder in (_spark_home() / "jars", root / ".jars"):
        for jar in sorted(folder.glob("*.jar")):
            info = jar.stat()
            digest.update(f"{jar}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def archive_paths(root: Path) -> tuple[Path, Path, Path]:
    folder = root / ".jars" / "cds"
    return folder / "spark.jsa", folder / "spark.stamp", folder / "conf"


def launch(root: Path = PROJECT_ROOT) -> ArchiveLaunch | None:
    """The launch settings of a driver JVM that maps the checkout's archive; None when there is no up-to-date
    archive, the user set ``SPARK_CONF_DIR``, or ``BINLAKE_CLASS_ARCHIVE=off``."""
    if os.environ.get(OFF_VARIABLE, "").lower() in {"off", "0", "no", "false"} or "SPARK_CONF_DIR" in os.environ:
        return None
    archive, _, conf_dir = archive_paths(root)
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


def is_current(root: Path = PROJECT_ROOT) -> bool:
    """Whether the checkout's archive was written with the JDK and jars at hand."""
    archive, stamp_file, _ = archive_paths(root)
    try:
        return archive.is_file() and stamp_file.read_text() == stamp(root)
    except OSError:
        return False
