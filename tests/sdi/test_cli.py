"""``binlake sdi``: ibd2sdi and jsonl output, ``sdi diff``, errors."""

from __future__ import annotations

import json

from binlake.cli import main
from tests.support import fixture_path


def _extracted(name: str) -> bytes:
    return fixture_path("sdi", "extracted", f"innodb_ruby__{name}.json").read_bytes()


def test_ibd2sdi_output_holds_the_stored_sdi_verbatim(capsys):
    path = fixture_path("sdi", "ibd", "innodb_ruby", "8.0_sakila_address.ibd")
    assert main(["sdi", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith('["ibd2sdi"\n,\n{\n\t"type": 1,\n\t"id": 365,\n\t"object":\n\t\t')
    assert _extracted("8.0_sakila_address.type1.id365").decode() in out
    assert _extracted("8.0_sakila_address.type2.id8").decode() in out
    data = json.loads(out)
    assert [(d["type"], d["id"]) for d in data[1:]] == [(1, 365), (2, 8)]
    assert data[1]["object"] == json.loads(_extracted("8.0_sakila_address.type1.id365"))


def test_pretty_and_jsonl_on_a_folder(capsys, tmp_path):
    path = fixture_path("sdi", "ibd", "innodb_ruby", "8.0_sakila_actor.ibd")
    assert main(["sdi", "--pretty", str(path)]) == 0
    assert '\t"object":\n\t\t{\n    "mysqld_version_id": 80040,' in capsys.readouterr().out
    folder = fixture_path("sdi", "ibd")
    assert main(["sdi", "--format", "jsonl", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 20
    first = json.loads(lines[0])
    assert (first["file"].endswith("8.0_sakila_actor.ibd"), first["type"], first["id"]) == (True, 1, 364)
    assert lines[0].endswith(',"sdi":' + _extracted("8.0_sakila_actor.type1.id364").decode() + "}")


def test_diff(capsys):
    a = fixture_path("sdi", "ibd", "innodb_ruby", "8.0_sakila_film.ibd")
    b = fixture_path("sdi", "ibd", "innodb_ruby", "8.4_sakila_film.ibd")
    assert main(["sdi", "diff", str(a), str(b)]) == 0
    assert capsys.readouterr().out == "sakila.film: definitions are equal\n"
    c = fixture_path("sdi", "ibd", "innodb_ruby", "8.4_sakila_actor.ibd")
    assert main(["sdi", "diff", str(a), str(c), "--json"]) == 1
    d = json.loads(capsys.readouterr().out)["diffs"][0]
    assert d["table_changes"][0] == {"attribute": "name", "old": "film", "new": "actor"}
    assert d["columns_renamed"] == [["film_id", "actor_id"]]


def test_errors_are_one_line_with_exit_2(capsys, tmp_path):
    assert main(["sdi", "diff", "only-one"]) == 2
    assert "usage: binlake sdi diff OLD NEW" in capsys.readouterr().err
    bad = tmp_path / "bad.ibd"
    bad.write_bytes(bytes(20000))
    assert main(["sdi", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"binlake: error: {bad}: page 0:") and err.count("\n") == 1
    assert (
        main(
            [
                "sdi",
                "diff",
                str(fixture_path("sdi", "extracted", "innodb_ruby__8.0_sakila_actor.type2.id7.json")),
                str(fixture_path("sdi", "ibd", "innodb_ruby", "8.0_sakila_actor.ibd")),
            ]
        )
        == 2
    )
    assert "holds no Table SDI" in capsys.readouterr().err
