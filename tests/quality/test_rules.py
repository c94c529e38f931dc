"""Rules generated from SDI: checked against the generator's DDL (manifest) and MySQL's documented type ranges."""

from __future__ import annotations

import re

import pytest

from binlake.quality.rules import numeric_range, primary_key, table_rules
from binlake.sdi import dd_types as T
from binlake.sdi.model import Column, Index, IndexElement, Table


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> dict[str, Table]:
    """The newest definition of each table the generator writes SDI for (its DDL is in the manifest)."""
    import datetime as dt

    from binlake.generate.config import GenerateConfig
    from binlake.generate.run import generate
    from binlake.sdi.registry import SchemaRegistry

    out = tmp_path_factory.mktemp("gen")
    generate(out, GenerateConfig(days=1, scale=0.001))
    reg = SchemaRegistry()
    reg.snapshot([out / "sdi"], dt.datetime(2024, 3, 1))
    return {name: reg.versions(db, name)[-1].table for db, name in reg.tables()}


def _by(rules, kind, column):
    found = [r for r in rules if r.kind == kind and r.column == column]
    assert len(found) <= 1
    return found[0] if found else None


def test_primary_key_not_null_and_unique(shop):
    rules = table_rules(shop["customers"])  # PRIMARY KEY (`id`)
    assert _by(rules, "not_null", "id") is not None and _by(rules, "unique", "id") is not None
    assert primary_key(shop["orders"]) == ("order_id",)
    assert primary_key(shop["audit_log"]) == ()  # no primary key: no uniqueness rule at all
    assert not [r for r in table_rules(shop["audit_log"]) if r.kind in ("unique", "compound_unique")]


def test_not_null_columns_follow_the_ddl(shop):
    rules = table_rules(shop["customers"])
    not_null = {r.column for r in rules if r.kind == "not_null"}
    # from the DDL: id, email, country, signup_at, balance, tier, consents, is_active are NOT NULL
    assert not_null == {"id", "email", "country", "signup_at", "balance", "tier", "consents", "is_active"}


def test_lengths_are_characters_not_bytes(shop):
    rules = table_rules(shop["customers"])
    assert _by(rules, "max_length", "email").param("max_value") == 120  # varchar(120) utf8mb4: 480 bytes
    assert _by(rules, "max_length", "country").param("max_value") == 2  # char(2)
    assert _by(table_rules(shop["audit_log"]), "max_length", "action").param("max_value") == 8  # char(8) latin1
    assert _by(table_rules(shop["audit_log"]), "max_length", "payload") is None  # varbinary: bytes, unchecked
    assert _by(rules, "max_length", "notes") is None  # TEXT: no character bound


def test_enum_and_set_domains(shop):
    rules = table_rules(shop["customers"])
    assert _by(rules, "in_set", "tier").param("value_set") == ["bronze", "silver", "gold", "platinum"]
    pattern = re.compile(_by(rules, "set_members", "consents").param("regex"))
    for ok in ("", "sms", "newsletter,sms,beta,vip", "sms,beta"):
        assert pattern.search(ok), ok
    for bad in ("foo", "sms,", ",sms", "sms,foo", "SMS"):
        assert not pattern.search(bad), bad


def test_numeric_ranges_from_the_types(shop):
    products = {c.name: c for c in shop["products"].columns}
    assert numeric_range(products["min_age"])[:2] == (0, 255)  # tinyint unsigned
    assert numeric_range(products["stock"])[:2] == (-8388608, 8388607)  # mediumint
    assert numeric_range(products["price"])[:2] == (-99999999.99, 99999999.99)  # decimal(10,2)
    assert numeric_range(products["bit_flags"])[:2] == (0, 1023)  # bit(10)
    assert numeric_range(products["sku"]) is None  # signed bigint: silver's own type
    orders = {c.name: c for c in shop["orders"].columns}
    assert numeric_range(orders["order_id"])[:2] == (0, 18446744073709551615)  # bigint unsigned
    assert numeric_range(orders["qty"])[:2] == (0, 65535)  # smallint unsigned


def test_json_columns(shop):
    assert {r.column for r in table_rules(shop["orders"]) if r.kind == "json"} == {"doc"}
    assert {r.column for r in table_rules(shop["products"]) if r.kind == "json"} == {"attributes"}


def test_hidden_engine_columns_are_not_silver_columns(shop):
    exists = {r.column for r in table_rules(shop["audit_log"]) if r.kind == "column_exists"}
    assert "DB_ROW_ID" not in exists and "DB_TRX_ID" not in exists and "at_ts" in exists


def _col(name: str, opx: int, nullable: bool = False) -> Column:
    return Column(
        name=name,
        type=T.LONG,
        is_nullable=nullable,
        ordinal_position=opx + 1,
        char_length=11,
        numeric_precision=10,
        collation_id=255,
    )


def test_compound_primary_key_and_unique_index():
    cols = (_col("a", 0), _col("b", 1), _col("c", 2, nullable=True), _col("d", 3, nullable=True))
    table = Table(
        name="t",
        schema_ref="db",
        engine="InnoDB",
        collation_id=255,
        columns=cols,
        indexes=(
            Index(
                name="PRIMARY",
                type=T.IT_PRIMARY,
                ordinal_position=1,
                elements=(IndexElement(1, 4, 2, False, 0), IndexElement(2, 4, 2, False, 1)),
            ),
            Index(
                name="uq",
                type=T.IT_UNIQUE,
                ordinal_position=2,
                elements=(IndexElement(1, 4, 2, False, 2), IndexElement(2, 4, 2, False, 3)),
            ),
        ),
    )
    rules = table_rules(table)
    compound = [r for r in rules if r.kind == "compound_unique"]
    assert [(r.columns, r.param("ignore_row_if")) for r in compound] == [
        (("a", "b"), None),
        (("c", "d"), "any_value_is_missing"),
    ]
    assert {r.column for r in rules if r.kind == "not_null"} == {"a", "b"}
