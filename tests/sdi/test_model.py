"""The typed SDI model: values, FR-03 required members, exact write-back, ibd2sdi and .sdi files."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from binlake.sdi import SdiFormatError, Table, Tablespace, parse_sdi, to_ibd2sdi, to_json
from binlake.sdi.model import Column, parse_properties
from binlake.sdi.readers import entries_from_ibd2sdi, read_entries
from tests.support import fixture_path


def _extracted() -> list:
    return sorted(fixture_path("sdi", "extracted").glob("*.json"))


def _load(name: str):
    path = fixture_path("sdi", "extracted", name)
    return path.read_bytes(), parse_sdi(path.read_bytes(), str(path))


def test_all_extracted_records_round_trip_byte_for_byte():
    files = _extracted()
    assert len(files) == 20
    for path in files:
        raw = path.read_bytes()
        doc = parse_sdi(raw, str(path))
        written = to_json(doc)
        assert written.encode("utf-8") == raw, path.name
        assert parse_sdi(written) == doc  # read, write, read: equal models
        # a model rebuilt without the member order of the source is still equal after a round trip
        plain = dataclasses.replace(doc, json_keys=())
        assert parse_sdi(to_json(plain)) == dataclasses.replace(doc, json_keys=tuple(json.loads(raw)))


def test_header_and_table_members_of_actor():
    raw, doc = _load("innodb_ruby__8.0_sakila_actor.type1.id364.json")
    data = json.loads(raw)
    h = doc.header
    assert (h.mysqld_version_id, h.dd_version, h.sdi_version, h.dd_object_type) == (80040, 80023, 80019, "Table")
    t = doc.table
    assert isinstance(t, Table)
    assert t.identity == ("sakila", "actor", "InnoDB")
    assert (t.collation_id, t.row_format, t.se_private_id, t.created) == (255, 2, 1064, 20241118211503)
    assert [c.name for c in t.columns] == [
        "actor_id",
        "first_name",
        "last_name",
        "last_update",
        "DB_TRX_ID",
        "DB_ROLL_PTR",
    ]
    for col, src in zip(t.columns, data["dd_object"]["columns"]):
        for key, value in src.items():
            got = getattr(col, key)
            if key == "default_value":
                assert got == base64.b64decode(value)
            elif key == "elements":
                assert got == ()
            else:
                assert got == value, (col.name, key)
    first_name = t.columns[1]
    assert first_name.type_name == "VARCHAR" and first_name.char_length == 180
    assert first_name.default_value == bytes(181)  # the record image: 1 length byte + 45 * 4, all zero
    assert first_name.has_no_default and not first_name.default_value_null
    last_update = t.columns[3]
    assert (last_update.type_name, last_update.default_option, last_update.update_option) == (
        "TIMESTAMP2",
        "CURRENT_TIMESTAMP",
        "CURRENT_TIMESTAMP",
    )
    pk = t.indexes[0]
    assert (pk.name, pk.type, [(e.column_opx, e.length, e.hidden) for e in pk.elements][:2]) == (
        "PRIMARY",
        1,
        [(0, 2, False), (4, 4294967295, True)],
    )


def test_enum_set_geometry_and_foreign_keys():
    _, film = _load("innodb_ruby__8.0_sakila_film.type1.id370.json")
    rating = film.table.column("rating")
    assert rating.element_names == ("G", "PG", "PG-13", "R", "NC-17")
    assert rating.default_value_utf8 == "G" and rating.options_map() == {"interval_count": "5"}
    assert film.table.column("special_features").element_names == (
        "Trailers",
        "Commentaries",
        "Deleted Scenes",
        "Behind the Scenes",
    )
    rate = film.table.column("rental_rate")
    assert (rate.numeric_precision, rate.numeric_scale) == (4, 2)
    fk = film.table.foreign_keys[0]
    assert (fk.name, fk.referenced_table_schema_name, fk.referenced_table_name, fk.update_rule, fk.delete_rule) == (
        "fk_film_language",
        "sakila",
        "language",
        3,
        2,
    )
    assert [(e.column_opx, e.referenced_column_name) for e in fk.elements] == [(4, "language_id")]
    _, address = _load("innodb_ruby__8.0_sakila_address.type1.id365.json")
    loc = address.table.column("location")
    assert (loc.type_name, loc.options_map()["geom_type"], loc.srs_id_null, loc.srs_id) == ("GEOMETRY", "0", False, 0)
    assert [i.type for i in address.table.indexes] == [1, 3, 5]  # PRIMARY, MULTIPLE, SPATIAL
    _, film_text = _load("innodb_ruby__8.0_sakila_film_text.type1.id373.json")
    ft = film_text.table.indexes[1]
    assert (ft.name, ft.type, ft.algorithm) == ("idx_title_description", 4, 5)  # FULLTEXT
    assert film_text.table.column("FTS_DOC_ID").hidden == 2


def test_tablespace_object():
    _, doc = _load("innodb_ruby__8.0_sakila_actor.type2.id7.json")
    ts = doc.obj
    assert isinstance(ts, Tablespace)
    assert (ts.name, ts.engine, [(f.ordinal_position, f.filename) for f in ts.files]) == (
        "sakila/actor",
        "InnoDB",
        [(1, "./sakila/actor.ibd")],
    )
    assert parse_properties(ts.se_private_data) == {
        "flags": "16417",
        "id": "2",
        "server_version": "80040",
        "space_version": "1",
        "state": "normal",
    }


def _without(raw: bytes, path: list, key: str) -> str:
    data = json.loads(raw)
    node = data
    for p in path:
        node = node[p]
    del node[key]
    return json.dumps(data)


@pytest.mark.parametrize(
    "path,key,field",
    [
        ([], "dd_version", "dd_version"),
        ([], "dd_object", "dd_object"),
        (["dd_object"], "schema_ref", "dd_object.schema_ref"),
        (["dd_object"], "columns", "dd_object.columns"),
        (["dd_object", "columns", 2], "type", "dd_object.columns[2].type"),
        (["dd_object", "columns", 0], "collation_id", "dd_object.columns[0].collation_id"),
        (["dd_object", "indexes", 1, "elements", 0], "column_opx", "dd_object.indexes[1].elements[0].column_opx"),
    ],
)
def test_missing_required_member_names_file_and_field(path, key, field):
    raw, _ = _load("innodb_ruby__8.0_sakila_actor.type1.id364.json")
    with pytest.raises(SdiFormatError) as err:
        parse_sdi(_without(raw, path, key), "actor.sdi")
    assert err.value.field == field
    assert str(err.value) == f"actor.sdi: {field}: " + (
        "required SDI header member is missing (FR-03)"
        if not path
        else f"required {err.value.args[0].split('required ')[1].split(' ')[0]} member is missing (FR-03)"
    )
    assert "missing (FR-03)" in str(err.value)


@pytest.mark.parametrize(
    "mutate,field,message",
    [
        (lambda d: d["dd_object"]["columns"][0].update(type="3"), "dd_object.columns[0].type", "expected a number"),
        (
            lambda d: d["dd_object"]["columns"][1].update(default_value="@@"),
            "dd_object.columns[1].default_value",
            "invalid base64",
        ),
        (lambda d: d["dd_object"].update(columns={}), "dd_object.columns", "expected an array of Column"),
        (lambda d: d.update(dd_object_type="View"), "dd_object_type", "expected one of"),
    ],
)
def test_wrong_member_types(mutate, field, message):
    raw, _ = _load("innodb_ruby__8.0_sakila_actor.type1.id364.json")
    data = json.loads(raw)
    mutate(data)
    with pytest.raises(SdiFormatError, match=message) as err:
        parse_sdi(json.dumps(data), "x.sdi")
    assert err.value.field == field


def test_not_json_and_not_utf8():
    with pytest.raises(SdiFormatError, match=r"x.sdi: \$: invalid JSON at line 1 column 2"):
        parse_sdi('{"a', "x.sdi")
    with pytest.raises(SdiFormatError, match="not UTF-8 at byte 1"):
        parse_sdi(b"{\xff}", "x.sdi")


def test_unknown_members_survive_a_round_trip():
    raw, _ = _load("innodb_ruby__8.0_sakila_actor.type2.id7.json")
    data = json.loads(raw)
    data["dd_object"]["future_member"] = {"x": [1, "\u00e9\n"]}
    data["future_header"] = True
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    doc = parse_sdi(text)
    assert dict(doc.obj.extra) == {"future_member": {"x": [1, "\u00e9\n"]}}
    assert to_json(doc) == text


def test_parse_properties():
    assert parse_properties("a=1;b=x\\;y;empty=;flag;") == {"a": "1", "b": "x;y", "empty": "", "flag": ""}
    assert parse_properties("") == {}


def test_ibd2sdi_output_both_layouts_and_sdi_files(tmp_path):
    entries = read_entries(fixture_path("sdi", "ibd", "innodb_ruby", "8.0_sakila_film.ibd"))
    triples = [(e.sdi_type, e.sdi_id, e.text) for e in entries]
    compact = to_ibd2sdi(triples)
    assert compact.startswith('["ibd2sdi"\n,\n{\n\t"type": 1,\n\t"id": 370,\n\t"object":\n\t\t{"mysqld_version_id"')
    assert compact.endswith(
        '"files":[{"ordinal_position":1,"filename":"./sakila/film.ibd","se_private_data":"id=8;"}]}}\n}\n]\n'
    )
    pretty = to_ibd2sdi(triples, pretty=True)
    assert '\t"object":\n\t\t{\n    "mysqld_version_id": 80040,\n    "dd_version": 80023,' in pretty
    assert json.loads(pretty)[1]["object"] == json.loads(entries[0].text)
    for text in (compact, pretty):
        again = entries_from_ibd2sdi(text, "dump.json")
        assert [(e.sdi_type, e.sdi_id, e.text) for e in again] == triples
    dump = tmp_path / "film_dump.json"
    dump.write_text(pretty)
    assert read_entries(dump) == entries
    sdi_file = tmp_path / "film_370.sdi"
    sdi_file.write_text(entries[0].text)
    [entry] = read_entries(sdi_file)
    assert (entry.sdi_type, entry.sdi_id, entry.text) == (1, 370, entries[0].text)
    with pytest.raises(SdiFormatError, match="expected ibd2sdi output"):
        entries_from_ibd2sdi('["other"]', "x")
    with pytest.raises(SdiFormatError, match="--skip-data"):
        entries_from_ibd2sdi('["ibd2sdi", {"type": 1, "id": 5}]', "x")


def test_a_model_built_in_code_serializes_in_spec_order():
    col = Column(name="c", type=4, is_nullable=True, collation_id=255)
    doc_obj = Table(name="t", schema_ref="db", engine="InnoDB", collation_id=255, columns=(col,))
    from binlake.sdi.model import SdiDocument, SdiHeader

    text = to_json(SdiDocument(SdiHeader(80040, 80023, 80019, "Table"), doc_obj))
    data = json.loads(text)
    assert list(data) == ["mysqld_version_id", "dd_version", "sdi_version", "dd_object_type", "dd_object"]
    assert list(data["dd_object"])[:3] == ["name", "mysql_version_id", "created"]
    assert data["dd_object"]["columns"][0]["default_value"] == ""
    keys = tuple(data["dd_object"]["columns"][0])
    assert parse_sdi(text).table.columns[0] == dataclasses.replace(col, json_keys=keys)
