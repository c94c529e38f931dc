"""``binlake fetch`` argument handling: one-line errors that say what to fix, never a traceback or a password."""

from __future__ import annotations

import pytest

from binlake.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["fetch", *argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_password_in_uri_is_refused_without_echoing_it(capsys, tmp_path) -> None:
    code, text = run(capsys, "--source", "mysql://repl:hunter2@127.0.0.1:1/?server_id=5", "--landing", str(tmp_path))
    assert code == 2 and "contains a password" in text and "hunter2" not in text
    assert "Traceback" not in text


def test_missing_server_id_says_why_it_matters(capsys, tmp_path) -> None:
    code, text = run(capsys, "--source", "mysql://repl@127.0.0.1:1/", "--landing", str(tmp_path))
    assert code == 2 and "no server_id" in text and "disconnects the older" in text


def test_unreachable_server_gives_up_after_retries(capsys, tmp_path) -> None:
    # port 1 on loopback refuses at once; --max-retries 0 makes it a single attempt
    code, text = run(
        capsys,
        "--source",
        "mysql://repl@127.0.0.1:1/?server_id=5&connect_timeout=2",
        "--landing",
        str(tmp_path),
        "--max-retries",
        "0",
    )
    assert code == 2 and "connection lost or refused" in text and "gave up after 1 attempts" in text


def test_help_names_the_password_sources(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["fetch", "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "BINLAKE_MYSQL_PASSWORD" in out and "--stop-never" in out and "REPLICATION SLAVE" in out
