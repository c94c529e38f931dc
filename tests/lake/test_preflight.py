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
from binlake.lake.preflight import check_landing, check_lake

BIN = Path(sys.executable).with_name("binlake")


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    sentences = [s.strip() for s in re.split(r"[;:.]\s", lines[0]) if s.strip()]
    assert len(sentences) == len(set(sentences)), lines[0]          # no sentence said twice
    return lines[0]


@pytest.mark.slow
def test_lake_that_is_a_file_is_refused_before_spark(tmp_path: Path) -> None:
    landing = tmp_path / "landing" / "src"
    landing.mkdir(parents=True)
    lake = tmp_path / "lake"
    lake.write_text("not a folder")
    run = subprocess.run([str(BIN), "run", "--landing", str(tmp_path / "landing"), "--lake", str(lake)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    line = _one_line(run.stderr)
    assert f"lake {lake} is a file" in line and "pass a folder path" in line
    assert "Spark" not in run.stderr and not (tmp_path / "logs").exists()
    assert lake.read_text() == "not a folder"               # untouched


def test_lake_under_a_file_and_landing_that_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(PathUnusable, match=f"lies under {blocker}, which is a file"):
        check_lake(str(blocker / "lake"))
    with pytest.raises(PathUnusable, match="is a file, not a folder"):
        check_landing(str(blocker))
    with pytest.raises(PathUnusable, match="does not exist"):
        check_landing(str(tmp_path / "nowhere"))
    check_lake(str(tmp_path / "new" / "lake"))              # created, writable: no error, no probe left
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
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {mnt}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no private mounts here: {probe.stderr.strip()}")
    return subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o {options} tmpfs {mnt} && {script}"],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_full_disk_is_refused(tmp_path: Path) -> None:
    (tmp_path / "landing" / "src").mkdir(parents=True)
    run = _in_private_tmpfs(tmp_path, "size=2m",
                            f"{BIN} run --landing {tmp_path / 'landing'} --lake {tmp_path / 'mnt' / 'lake'}")
    assert run.returncode == 2, run.stderr
    line = _one_line(run.stderr)
    assert "is on a full disk" in line and "free space there" in line and "Spark" not in run.stderr


@pytest.mark.slow
def test_read_only_disk_is_refused(tmp_path: Path) -> None:
    (tmp_path / "landing" / "src").mkdir(parents=True)
    run = _in_private_tmpfs(tmp_path, "ro",
                            f"{BIN} run --landing {tmp_path / 'landing'} --lake {tmp_path / 'mnt' / 'lake'}")
    assert run.returncode == 2, run.stderr
    line = _one_line(run.stderr)
    assert "can not be written (read-only file system)" in line and "Spark" not in run.stderr
