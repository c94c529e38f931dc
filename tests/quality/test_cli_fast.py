"""``binlake validate`` without Spark: help and a missing lake."""

from __future__ import annotations

from binlake.cli import main


def test_help_lists_the_suites(capsys):
    try:
        main(["validate", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    for name in ("silver.reconciliation", "bronze.row_sequence", "meta.quarantine", "--run-id"):
        assert name in out


def test_missing_lake_is_a_usage_error(tmp_path, capsys):
    assert main(["validate", "--lake", str(tmp_path / "nope")]) == 2
    assert "no such lake directory" in capsys.readouterr().err


def test_help_documents_the_exit_codes(capsys):
    try:
        main(["validate", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "1 checks failed" in out and "2 could not run" in out and "this wins over 1" in out
