"""A lake or landing path that is a file, read-only or on a full disk is refused in one line before Spark starts
(issue 26 item 8): the CLI's exit 2 and a message naming the path, what is wrong and what to do, each said once.
Read-only and full disks are real: a tmpfs mounted in a private mount namespace (``unshare -m``), skipped where
that is not allowed."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from binlake.lake.errors import PathUnusable
from binlake.lake.preflight import check_lake, check_landing

BIN = Path(sys.executable).with_name("binlake")


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    sentences = [s.strip() for s in re.split(r"[;:.]\s", lines[0]) if s.strip()]
    assert len(sentences) == len(set(sentences)), lines[0]  # no sentence said twice
    return lines[0]


@pytest.mark.slow
def test_lake_that_is_a_file_is_refused_before_spark(tmp_path: Path) -> None:
    landing = tmp_path / "landing" / "src"
    landing.mkdir(parents=True)
    lake = tmp_path / "lake"
    lake.write_text("not a folder")
    run = subprocess.run(
        [str(BIN), "run", "--landing", str(tmp_path / "landing"), "--lake", str(lake)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2
    line = _one_line(run.stderr)
    assert f"lake {lake} is a file" in line and "pass a folder path" in line
    assert "Spark" not in run.stderr and not (tmp_path / "logs").exists()
    assert lake.read_text() == "not a folder"  # untouched


def test_lake_under_a_file_and_landing_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(PathUnusable, match=f"lies under {blocker}, which is a file"):
        check_lake(str(blocker / "lake"))
    with pytest.raises(PathUnusable, match="is a file, not a folder"):
        check_landing(str(blocker))
    with pytest.raises(PathUnusable, match="does not exist"):
        check_landing(str(tmp_path / "nowhere"))
    check_lake(str(tmp_path / "new" / "lake"))  # created, writable: no error, no probe left
    assert list((tmp_path / "new" / "lake").iterdir()) == []


@pytest.mark.slow
def test_validate_refuses_a_lake_that_is_a_file(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.write_text("x")
    run = subprocess.run([str(BIN), "validate", "--lake", str(lake)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Spark" not in run.stderr
    _one_line(run.stderr)


def _in_private_tmpfs(tmp_path: Path, options: str, script: str) -> subprocess.CompletedProcess:
    if shutil.which("unshare") is None:
        pytest.skip("unshare not installed")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {mnt}"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        pytest.skip(f"no private mounts here: {probe.stderr.strip()}")
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o {options} tmpfs {mnt} && {script}"],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_full_disk_is_refused(tmp_path: Path) -> None:
    (tmp_path / "landing" / "src").mkdir(parents=True)
    run = _in_private_tmpfs(
        tmp_path, "size=2m", f"{BIN} run --landing {tmp_path / 'landing'} --lake {tmp_path / 'mnt' / 'lake'}"
    )
    assert run.returncode == 2, run.stderr
    line = _one_line(run.stderr)
    assert "is on a full disk" in line and "free space there" in line and "Spark" not in run.stderr


@pytest.mark.slow
def test_read_only_disk_is_refused(tmp_path: Path) -> None:
    (tmp_path / "landing" / "src").mkdir(parents=True)
    run = _in_private_tmpfs(
        tmp_path, "ro", f"{BIN} run --landing {tmp_path / 'landing'} --lake {tmp_path / 'mnt' / 'lake'}"
    )
    assert run.returncode == 2, run.stderr
    line = _one_line(run.stderr)
    assert "can not be written (read-only file system)" in line and "Spark" not in run.stderr


class Py4JJavaError(Exception):
    """Stands for py4j's error class: binlake.lake.failures tells Spark failures by the module of their class."""


Py4JJavaError.__module__ = "py4j.protocol"


@pytest.mark.parametrize("writable", [True, False])
def test_a_spark_failure_is_one_line_each_thing_said_once(tmp_path: Path, writable: bool) -> None:
    from binlake.lake.errors import SparkJobFailed
    from binlake.lake.failures import stage
    from binlake.lake.layout import LakeLayout

    root = tmp_path / "lake"
    if not writable:
        root.write_text("a file: no logs folder can be made under it")
    error = Py4JJavaError(
        "An error occurred while calling o45.save.\n: java.io.FileNotFoundException: "
        "/x/part-0001 (Not a directory)\n\tat org.apache.hadoop.fs.Foo(Foo.java:1)"
    )
    with pytest.raises(SparkJobFailed) as caught:
        with stage("snapshot_sdi", LakeLayout(str(root))):
            raise error
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith("snapshot_sdi failed: a Spark job failed: java.io.FileNotFoundException: /x/part-0001")
    assert line.count("full trace") == (1 if writable else 0)  # a log only when one was written
    assert line.lower().count("rerunning") == 1 and "see the log" not in line
    if writable:
        log = Path(line.split("full trace in ", 1)[1].split(". Rerunning", 1)[0])
        assert log.is_file() and "FileNotFoundException" in log.read_text()
