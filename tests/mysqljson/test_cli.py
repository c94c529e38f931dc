"""`binlake json` command-line contracts (issue 3)."""

from __future__ import annotations

import pytest

from binlake.cli import main
from tests.mysqljson.vectors import DIFFS, JSONB, vector


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_decode_prints_mysql_text(capsys: pytest.CaptureFixture[str]) -> None:
    case = vector(JSONB, "vitess/obj-complex")
    assert run(capsys, "json", "decode", case["hex"]) == (0, case["expected_text"] + "\n", "")
    assert run(capsys, "json", "decode", "0x 0401")[:2] == (0, "true\n")


def test_apply_success_prints_status_then_document(capsys: pytest.CaptureFixture[str]) -> None:
    diff_hex = vector(DIFFS, "binlog:rust_mysql_common/json.binlog.000001@3750/row0/col1")["hex"]
    before = vector(JSONB, "binlog:rust_mysql_common/json.binlog.000001@2612/row0/after/col1")["expected_text"]
    code, out, _ = run(capsys, "json", "apply", "--doc", before, "--diffs", diff_hex)
    assert code == 0
    assert out == 'SUCCESS\n{"age": 26, "data": "xxxxxxxxxx", "name": "Joe"}\n'


def test_apply_rejected_and_error_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "json", "apply", "--doc", '{"name": "Joe"}', "--diffs", "0005242e61676503051a00")
    assert (code, out) == (3, 'REJECTED\n{"name": "Joe"}\n')
    assert "REPLACE $.age" in err
    code, out, err = run(capsys, "json", "apply", "--doc", "[1]", "--diffs", "0905")
    assert (code, out) == (4, "ERROR\n[1]\n")
    assert "unknown operation 9" in err


def test_bad_input_tells_what_to_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "json", "decode", "xyz")
    assert code == 2 and "hexadecimal" in err
    code, _, err = run(capsys, "json", "apply", "--doc", "{bad", "--diffs", "")
    assert code == 2 and "--doc is not a JSON document" in err
    code, _, err = run(capsys, "json", "decode", "0003")
    assert code == 2 and "truncated" in err


def test_diffs_lists_operations_and_mysqlbinlog_form(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "json", "diffs", "0005242e61676503051a000203242e63", "--column", "@2")
    assert code == 0
    assert out == (
        "#0 REPLACE $.age 26\n#1 REMOVE $.c\nJSON_REMOVE(\n###      JSON_REPLACE(@2, '$.age', 26),\n###      '$.c')\n"
    )


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["json", "apply", "--help"])
    assert info.value.code == 0
    assert "Exit codes: 0 SUCCESS, 3 REJECTED, 4 ERROR" in capsys.readouterr().out


def test_apply_to_a_json_null_document(capsys: pytest.CaptureFixture[str]) -> None:
    """JSON null is a document (an empty vector succeeds); only SQL NULL, which --doc cannot be, is rejected."""
    assert run(capsys, "json", "apply", "--doc", "null", "--diffs", "")[:2] == (0, "SUCCESS\nnull\n")
    assert run(capsys, "json", "apply", "--doc", "null", "--diffs", "0203242e61")[:2] == (3, "REJECTED\nnull\n")
