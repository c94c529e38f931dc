"""The Spark driver's class archive (binlake.lake.class_archive): scripts/setup.sh writes it, a JVM that
build_session starts maps it (the JVM's own account of its mapped CDS archives, against the same start with the
archive off), and a short run's JVM compiles with C1 only. When it may not be used (a user's SPARK_CONF_DIR, the
switch off, a jar or JDK changed since) nothing of it is passed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.lake import class_archive
from binlake.lake.idle import SHORT_RUN_BYTES, LookAhead, is_short_run
from binlake.lake.session import (
    DRIVER_GC,
    DRIVER_METASPACE,
    LONG_RUN_JIT,
    SHORT_RUN_JIT,
    driver_jars,
    project_delta_jars,
)

SCRIPT = """\
import subprocess, sys
from binlake.lake.session import build_session
conf = {'spark.driver.extraJavaOptions': sys.argv[2]} if len(sys.argv) > 2 else None
spark = build_session('t', short_run=sys.argv[1] == 'short', conf=conf)
jvm = spark._jvm
beans = jvm.java.lang.management.ManagementFactory
print('ARGS', ' '.join(beans.getRuntimeMXBean().getInputArguments()))
print('GC', ','.join(b.getName() for b in beans.getGarbageCollectorMXBeans()))
info = subprocess.run(['jcmd', str(jvm.java.lang.ProcessHandle.current().pid()), 'VM.info'],
                      capture_output=True, text=True).stdout
loader = jvm.java.lang.ClassLoader.getSystemClassLoader()
delta = jvm.java.lang.Class.forName('io.delta.tables.DeltaTable', False, loader)
served = spark.sparkContext._jsc.sc().listJars().size()
print('DELTA', delta.getProtectionDomain().getCodeSource().getLocation().getPath(), served)
print('MAPPED', next(line for line in info.splitlines() if line.startswith('CDS archive(s) mapped at')))
"""


def _jvm(tmp_path: Path, *, short: bool = False, java: str = "", **env: str) -> tuple[str, int, str, str]:
    """(the driver JVM's arguments, bytes of CDS archives it mapped, its collectors, the jar its system class
    loader reads Delta from and how many jars the context serves) of a session a plain python starts (with
    ``java`` as the user's spark.driver.extraJavaOptions)."""
    script = tmp_path / "jvm.py"
    script.write_text(SCRIPT)
    environ = {k: v for k, v in os.environ.items() if k not in ("SPARK_CONF_DIR", "PYSPARK_GATEWAY_PORT")}
    environ.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, **env)
    out = subprocess.run(
        [sys.executable, str(script), "short" if short else "long", *([java] if java else [])],
        capture_output=True,
        text=True,
        env=environ,
    )
    names = ("ARGS", "MAPPED", "GC", "DELTA")
    found = dict(line.split(" ", 1) for line in out.stdout.splitlines() if line.split(" ", 1)[0] in names)
    assert set(found) == set(names), out.stderr[-3000:]
    size = re.search(r"size (\d+)", found["MAPPED"])
    assert size, found["MAPPED"]
    return found["ARGS"], int(size.group(1)), found["GC"], found["DELTA"]


@pytest.mark.spark
@pytest.mark.slow
def test_a_session_maps_the_archive_setup_wrote(tmp_path: Path) -> None:
    assert class_archive.is_current(), "scripts/setup.sh writes .jars/cds/ (python -m binlake.cli.class_archive_cmd)"
    args, mapped, gc, delta = _jvm(tmp_path, short=True)
    plain_args, plain_mapped, _, _ = _jvm(tmp_path, BINLAKE_CLASS_ARCHIVE="off")
    assert "-XX:SharedArchiveFile=" in args and SHORT_RUN_JIT in args
    assert "-XX:SharedArchiveFile=" not in plain_args and SHORT_RUN_JIT not in plain_args
    assert LONG_RUN_JIT in plain_args and LONG_RUN_JIT not in args
    assert DRIVER_METASPACE in args and DRIVER_METASPACE in plain_args
    # the JDK's own base archive is mapped either way; Spark's and Delta's classes come on top (about 190 MB)
    assert mapped > plain_mapped + (50 << 20), (mapped, plain_mapped)
    assert DRIVER_GC in args and set(gc.split(",")) == {"PS Scavenge", "PS MarkSweep"}, gc  # the throughput collector
    # Delta's classes come from the driver's own class path (as the archive was written), not from jars the
    # local context serves to itself (copied into a temporary folder at its start)
    location, served = delta.split()
    assert location in project_delta_jars() and "/delta-spark_" in location and served == "0"


@pytest.mark.spark
@pytest.mark.slow
def test_a_collector_the_user_chose_is_the_one_the_driver_runs(tmp_path: Path) -> None:
    """binlake's collector is left out when the user names one (a JVM given two refuses to start); the class
    archive still maps."""
    args, mapped, gc, _ = _jvm(tmp_path, java="-XX:+UseSerialGC")
    _, plain_mapped, _, _ = _jvm(tmp_path, BINLAKE_CLASS_ARCHIVE="off")
    assert DRIVER_GC not in args and "-XX:+UseSerialGC" in args
    assert set(gc.split(",")) == {"Copy", "MarkSweepCompact"}, gc
    assert mapped > plain_mapped + (50 << 20), (mapped, plain_mapped)


def _code_cache(*options: str) -> int:
    out = subprocess.run(["java", *options, "-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True)
    return int(re.search(r"ReservedCodeCacheSize\s*=\s*(\d+)", out.stdout).group(1))


def test_a_short_run_keeps_the_jdks_code_cache() -> None:
    """C1 only must not shrink the code cache to the JDK's 48 MB for non-tiered compilation: a short load followed
    by --validate filled it and the JVM failed ("Out of space in CodeCache for adapters")."""
    assert _code_cache(*SHORT_RUN_JIT.split()) >= _code_cache() >= 240 << 20


def test_a_long_run_compiles_only_the_hottest_code_with_c2() -> None:
    """The JDK takes LONG_RUN_JIT's flags (a JVM refuses to start on one it does not know) at their values."""
    out = subprocess.run(
        ["java", *LONG_RUN_JIT.split(), "-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    final = {m.group(1): int(m.group(2)) for m in re.finditer(r"(\w+)\s*=\s*(\d+)", out.stdout)}
    assert final["Tier4InvocationThreshold"] == 50000 and final["Tier4BackEdgeThreshold"] == 400000
    assert final["FreqInlineSize"] == 150 and final["TieredStopAtLevel"] == 4  # C2 still compiles


def test_the_first_class_unloading_collection_waits_for_128_mb_of_metaspace() -> None:
    """The JDK takes DRIVER_METASPACE at its value: no full collection for metaspace before 128 MB (the JDK's
    own threshold, about 21 MB, is passed within seconds of a run)."""
    out = subprocess.run(
        ["java", *DRIVER_METASPACE.split(), "-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert int(re.search(r"\bMetaspaceSize\s*=\s*(\d+)", out.stdout).group(1)) == 128 << 20


def _fake_checkout(root: Path) -> Path:
    (root / ".jars" / "cds" / "conf").mkdir(parents=True)
    (root / ".jars" / "delta.jar").write_bytes(b"jar")
    (root / ".jars" / "cds" / "spark.jsa").write_bytes(b"archive")
    (root / ".jars" / "cds" / "spark.stamp").write_text(class_archive.stamp(root))
    return root


def test_the_archive_is_used_only_as_written_and_when_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv(class_archive.OFF_VARIABLE, raising=False)
    root = _fake_checkout(tmp_path)
    launch = class_archive.launch(root)
    assert launch is not None
    assert launch.env == {"SPARK_CONF_DIR": str(root / ".jars" / "cds" / "conf")}
    assert f"-XX:SharedArchiveFile={root / '.jars' / 'cds' / 'spark.jsa'}" in launch.java_options

    monkeypatch.setenv(class_archive.OFF_VARIABLE, "off")
    assert class_archive.launch(root) is None
    monkeypatch.delenv(class_archive.OFF_VARIABLE)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))  # the user's: the JDK would refuse it, and it is theirs
    assert class_archive.launch(root) is None
    monkeypatch.delenv("SPARK_CONF_DIR")

    (root / ".jars" / "cds" / "conf" / "log4j2.properties").write_text("")  # a non-empty conf dir
    assert class_archive.launch(root) is None
    (root / ".jars" / "cds" / "conf" / "log4j2.properties").unlink()
    assert class_archive.launch(root) is not None

    os.utime(root / ".jars" / "delta.jar", ns=(1, 1))  # a jar replaced since the archive was written
    assert not class_archive.is_current(root) and class_archive.launch(root) is None


def test_a_run_is_short_when_every_source_tells_its_new_bytes_and_they_are_few() -> None:
    few = LookAhead(None, 10 << 20)
    assert is_short_run([few, LookAhead(None, 0)])
    assert not is_short_run([few, LookAhead(None, SHORT_RUN_BYTES)])  # together above
    assert not is_short_run([few, LookAhead(None, None)])  # a source whose work is not known (a snapshot, ...)
    assert not is_short_run([])  # the engine is not known yet


def test_delta_jars_go_first_on_the_drivers_class_path_and_only_a_clusters_executors_fetch_them() -> None:
    """The user's own class path and jars are kept beside Delta's."""
    assert driver_jars(["/d/a.jar", "/d/b.jar"], True, {}) == {
        "spark.driver.extraClassPath": "/d/a.jar:/d/b.jar",
        "spark.jars": "",
    }
    user = {"spark.driver.extraClassPath": "/u/c.jar", "spark.jars": "/u/x.jar"}
    assert driver_jars(["/d/a.jar"], True, user) == {
        "spark.driver.extraClassPath": "/d/a.jar:/u/c.jar",
        "spark.jars": "/u/x.jar",
    }
    assert driver_jars(["/d/a.jar"], False, user) == {
        "spark.driver.extraClassPath": "/d/a.jar:/u/c.jar",
        "spark.jars": "/u/x.jar,/d/a.jar",
    }
