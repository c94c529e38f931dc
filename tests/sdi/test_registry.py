"""The schema registry model: versions by fingerprint, definition_at, and its meta.schema_registry rows."""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta

import pytest

from binlake.sdi import BinlogPosition, SchemaRegistry, SdiError, fingerprint, parse_sdi
from binlake.sdi.registry import REGISTRY_ROW_SCHEMA
from tests.support import fixture_path

T0 = datetime(2024, 11, 18, 21, 0, 0)


def _doc(name: str):
    return parse_sdi(fixture_path("sdi", "extracted", f"innodb_ruby__{name}.json").read_bytes(), name)


def _altered_actor():
    data = json.loads(fixture_path("sdi", "extracted", "innodb_ruby__8.0_sakila_actor.type1.id364.json").read_bytes())
    extra = copy.deepcopy(data["dd_object"]["columns"][1])
    extra.update(name="nickname", ordinal_position=5)
    data["dd_object"]["columns"].insert(4, extra)
    return parse_sdi(json.dumps(data, separators=(",", ":")), "altered")


def test_unchanged_definitions_add_nothing_and_changes_add_versions():
    reg = SchemaRegistry()
    a80, a84 = _doc("8.0_sakila_actor.type1.id364"), _doc("8.4_sakila_actor.type1.id365")
    p1, p2, p3 = (
        BinlogPosition.of("binlog.000007", 4),
        BinlogPosition.of("binlog.000009", 1200),
        BinlogPosition.of("binlog.000012", 4),
    )
    assert reg.observe(a80, T0, p1, "snap-1/actor.ibd") is True
    assert reg.observe(a84, T0 + timedelta(days=1), p2, "snap-2/actor.ibd") is False  # 8.4, same definition
    assert reg.observe(a80, T0 + timedelta(days=2), None, "snap-3/actor.ibd") is False
    assert reg.observe(_altered_actor(), T0 + timedelta(days=3), p3, "snap-4/actor.ibd") is True
    [v1, v2] = reg.versions("sakila", "actor")
    assert (v1.version, v1.first_seen, v1.last_seen, v1.first_position, v1.last_position, v1.origin) == (
        1,
        T0,
        T0 + timedelta(days=2),
        p1,
        p2,
        "snap-1/actor.ibd",
    )
    assert v1.fingerprint == fingerprint(a80.table) == fingerprint(a84.table)
    assert (v2.version, v2.first_seen, v2.table.columns[4].name) == (2, T0 + timedelta(days=3), "nickname")

    assert reg.definition_at("sakila", "actor", T0 - timedelta(seconds=1)) is None
    assert reg.definition_at("sakila", "actor", T0).version == 1
    assert reg.definition_at("sakila", "actor", T0 + timedelta(days=2, hours=23)).version == 1
    assert reg.definition_at("sakila", "actor", T0 + timedelta(days=5)).version == 2
    assert reg.definition_at("sakila", "actor", BinlogPosition.of("binlog.000006", 999999)) is None
    assert reg.definition_at("sakila", "actor", BinlogPosition.of("binlog.000011", 4)).version == 1
    assert reg.definition_at("sakila", "actor", BinlogPosition.of("binlog.000012", 4)).version == 2
    assert reg.definition_at("sakila", "film", T0) is None


def test_observations_out_of_order_and_a_definition_that_comes_back():
    reg = SchemaRegistry()
    a, b = _doc("8.0_sakila_actor.type1.id364"), _altered_actor()
    reg.observe(a, T0 + timedelta(days=2))
    reg.observe(b, T0 + timedelta(days=1))
    reg.observe(a, T0)
    assert [
        (v.version, v.fingerprint == fingerprint(a.table), v.first_seen) for v in reg.versions("sakila", "actor")
    ] == [(1, True, T0), (2, False, T0 + timedelta(days=1)), (3, True, T0 + timedelta(days=2))]


def test_rows_follow_the_schema_and_rebuild_the_registry():
    reg = SchemaRegistry()
    reg.observe(_doc("8.0_sakila_actor.type1.id364"), T0, BinlogPosition.of("binlog.000007", 4), "a")
    reg.observe(_doc("8.0_sakila_film.type1.id370"), T0, None, "f")
    reg.observe(_altered_actor(), T0 + timedelta(days=1), BinlogPosition.of("binlog.000008", 4), "b")
    rows = reg.to_rows()
    assert [(r["db"], r["table_name"], r["version"]) for r in rows] == [
        ("sakila", "actor", 1),
        ("sakila", "actor", 2),
        ("sakila", "film", 1),
    ]
    names = [name for name, _, _ in REGISTRY_ROW_SCHEMA]
    for r in rows:
        assert list(r) == names
        assert all(r[n] is not None for n, _, nullable in REGISTRY_ROW_SCHEMA if not nullable)
    first = rows[0]
    assert (
        first["engine"],
        first["first_binlog_file"],
        first["first_binlog_pos"],
        first["last_binlog_pos"],
        first["mysqld_version_id"],
        first["dd_version"],
        first["column_count"],
    ) == ("InnoDB", "binlog.000007", 4, 4, 80040, 80023, 6)
    assert (
        first["sdi_json"].encode()
        == fixture_path("sdi", "extracted", "innodb_ruby__8.0_sakila_actor.type1.id364.json").read_bytes()
    )
    assert json.loads(first["columns_json"])[0] == {
        "name": "actor_id",
        "ordinal_position": 1,
        "dd_type": 3,
        "binlog_type": 2,
        "column_type": "smallint unsigned",
        "unsigned": True,
        "nullable": False,
        "collation_id": 255,
        "hidden": 1,
    }
    assert rows[2]["first_binlog_file"] is None

    again = SchemaRegistry.from_rows(rows)
    assert again.to_rows() == rows
    assert again.observe(_doc("8.4_sakila_film.type1.id371"), T0 + timedelta(days=9)) is False
    assert again.to_rows()[2]["last_seen"] == T0 + timedelta(days=9)


def test_registry_provider_and_errors():
    reg = SchemaRegistry()
    reg.observe(_doc("8.0_sakila_actor.type1.id364"), T0, origin="a")
    reg.observe(_altered_actor(), T0 + timedelta(days=1), origin="b")
    provider = reg.schema_provider()
    assert provider("sakila", "actor", (2, 15, 15, 17)).source.startswith("a (version 1, ")
    assert provider("sakila", "actor", (2, 15, 15, 17, 15)).source.startswith("b (version 2, ")
    with pytest.raises(SdiError, match="only Table SDIs"):
        reg.observe(_doc("8.0_sakila_actor.type2.id7"), T0)
    with pytest.raises(SdiError, match="no numeric suffix"):
        BinlogPosition.of("binlog", 4)


def test_snapshot_of_a_folder(tmp_path):
    reg = SchemaRegistry()
    folder = fixture_path("sdi", "ibd", "innodb_ruby")
    assert reg.snapshot([folder], T0, BinlogPosition.of("binlog.000003", 155)) == 7  # 7 distinct tables
    assert reg.snapshot([folder], T0 + timedelta(hours=1)) == 0
    assert reg.tables() == [
        ("sakila", "actor"),
        ("sakila", "address"),
        ("sakila", "film"),
        ("sakila", "film_text"),
        ("sakila", "fts_0000000000000451_config"),
        ("sakila", "staff"),
        ("sys", "sys_config"),
    ]
    [v] = reg.versions("sakila", "film")
    assert (v.first_seen, v.last_seen, v.first_position.file) == (T0, T0 + timedelta(hours=1), "binlog.000003")
