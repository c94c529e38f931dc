"""CR-03 comparison and the structured schema diff: 8.0 vs 8.4 sakila tables, and hand-edited versions."""

from __future__ import annotations

import copy
import json

import pytest

from binlake.sdi import definitions_equal, diff_tables, fingerprint, parse_sdi
from binlake.sdi.compare import Change
from tests.support import fixture_path

PAIRS = [
    ("actor.type1.id364", "actor.type1.id365"),
    ("address.type1.id365", "address.type1.id366"),
    ("film.type1.id370", "film.type1.id371"),
]


def _raw(name: str) -> dict:
    return json.loads(fixture_path("sdi", "extracted", f"innodb_ruby__{name}.json").read_bytes())


def _table(data: dict):
    return parse_sdi(json.dumps(data)).table


@pytest.mark.parametrize("old,new", PAIRS)
def test_80_and_84_versions_of_the_same_table_are_equal_definitions(old, new):
    a = _table(_raw(f"8.0_sakila_{old}"))
    b = _table(_raw(f"8.4_sakila_{new}"))
    assert a != b  # timestamps, versions, se_private_data differ ...
    assert definitions_equal(a, b)  # ... but not the definition
    assert fingerprint(a) == fingerprint(b)
    d = diff_tables(a, b)
    assert d.equal and d.same_table
    assert d.to_dict() == {
        "old_identity": ["sakila", old.split(".")[0], "InnoDB"],
        "new_identity": ["sakila", old.split(".")[0], "InnoDB"],
        "equal": True,
        "table_changes": [],
        "columns_added": [],
        "columns_dropped": [],
        "columns_renamed": [],
        "columns_retyped": [],
        "columns_modified": [],
        "columns_reordered": [],
        "indexes_added": [],
        "indexes_dropped": [],
        "indexes_changed": [],
        "foreign_keys_added": [],
        "foreign_keys_dropped": [],
        "foreign_keys_changed": [],
        "check_constraints_added": [],
        "check_constraints_dropped": [],
        "check_constraints_changed": [],
        "notes": [],
    }


def test_different_tables_have_different_fingerprints():
    prints = {
        fingerprint(_table(_raw(f"8.0_sakila_{n}")))
        for n in ("actor.type1.id364", "address.type1.id365", "film.type1.id370", "staff.type1.id389")
    }
    assert len(prints) == 4


def _set_columns(data: dict, names: list[str], new_columns: dict[str, dict] | None = None) -> None:
    """Rebuild dd_object.columns in the order ``names`` (dropping the others), renumbering ordinal_position and
    every column_opx of indexes and foreign keys, as the server would."""
    obj = data["dd_object"]
    by_name = {c["name"]: c for c in obj["columns"]}
    by_name.update(new_columns or {})
    old_names = [c["name"] for c in obj["columns"]]
    obj["columns"] = [by_name[n] for n in names]
    for i, c in enumerate(obj["columns"]):
        c["ordinal_position"] = i + 1
    new_opx = {old_names.index(n): names.index(n) for n in names if n in old_names}
    for idx in obj["indexes"]:
        idx["elements"] = [e for e in idx["elements"] if e["column_opx"] in new_opx]
        for e in idx["elements"]:
            e["column_opx"] = new_opx[e["column_opx"]]
    for fk in obj["foreign_keys"]:
        for e in fk["elements"]:
            e["column_opx"] = new_opx[e["column_opx"]]


def test_hand_edited_film_diff_in_full():
    old = _raw("8.0_sakila_film.type1.id370")
    new = copy.deepcopy(old)
    obj = new["dd_object"]
    cols = {c["name"]: c for c in obj["columns"]}
    cols["title"]["name"] = "film_title"  # rename
    cols["rental_rate"].update(column_type_utf8="decimal(6,2)", numeric_precision=6, char_length=8)  # retype
    cols["length"]["comment"] = "minutes"  # modify
    note = dict(copy.deepcopy(cols["title"]), name="rating_note", column_type_utf8="varchar(100)", char_length=400)
    obj["indexes"] = [i for i in obj["indexes"] if i["name"] != "idx_fk_original_language_id"]
    obj["foreign_keys"] = [f for f in obj["foreign_keys"] if f["name"] != "fk_film_language_original"]
    obj["foreign_keys"][0]["delete_rule"] = 3  # RESTRICT -> CASCADE
    obj["comment"] = "films"
    names = [c["name"] for c in obj["columns"]]
    names.remove("original_language_id")  # drop
    names[2], names[3] = names[3], names[2]  # description after release_year
    names.insert(names.index("last_update"), "rating_note")  # add
    _set_columns(new, names, {"rating_note": note})
    rating_opx = names.index("rating")
    obj["indexes"].append(
        dict(
            copy.deepcopy(obj["indexes"][1]),
            name="idx_rating",
            ordinal_position=4,
            elements=[{"ordinal_position": 1, "length": 20, "order": 2, "hidden": False, "column_opx": rating_opx}],
        )
    )
    a, b = _table(old), _table(new)
    assert not definitions_equal(a, b) and fingerprint(a) != fingerprint(b)
    d = diff_tables(a, b)
    assert d.to_dict() == {
        "old_identity": ["sakila", "film", "InnoDB"],
        "new_identity": ["sakila", "film", "InnoDB"],
        "equal": False,
        "table_changes": [{"attribute": "comment", "old": "", "new": "films"}],
        "columns_added": ["rating_note"],
        "columns_dropped": ["original_language_id"],
        "columns_renamed": [["title", "film_title"]],
        "columns_retyped": [
            {
                "name": "rental_rate",
                "changes": [
                    {"attribute": "column_type_utf8", "old": "decimal(4,2)", "new": "decimal(6,2)"},
                    {"attribute": "char_length", "old": 6, "new": 8},
                    {"attribute": "numeric_precision", "old": 4, "new": 6},
                ],
            }
        ],
        "columns_modified": [{"name": "length", "changes": [{"attribute": "comment", "old": "", "new": "minutes"}]}],
        "columns_reordered": ["description"],
        "indexes_added": ["idx_rating"],
        "indexes_dropped": ["idx_fk_original_language_id"],
        "indexes_changed": [],  # idx_title follows the renamed column: not a change
        "foreign_keys_added": [],
        "foreign_keys_dropped": ["fk_film_language_original"],
        "foreign_keys_changed": [
            {"name": "fk_film_language", "changes": [{"attribute": "delete_rule", "old": 2, "new": 3}]}
        ],
        "check_constraints_added": [],
        "check_constraints_dropped": [],
        "check_constraints_changed": [],
        "notes": [],
    }
    text = d.render()
    assert text.startswith("sakila.film:\n  table comment: '' -> 'films'\n")
    assert "  column renamed: title -> film_title\n" in text
    assert "  foreign key changed: fk_film_language: delete_rule: 2 -> 3\n" in text


def test_hand_edited_actor_engine_collation_index_and_check_constraint():
    old = _raw("8.0_sakila_actor.type1.id364")
    new = copy.deepcopy(old)
    obj = new["dd_object"]
    obj["engine"] = "MyISAM"
    obj["collation_id"] = 45
    obj["columns"][2].update(char_length=240, column_type_utf8="varchar(60)", is_nullable=True, default_value_null=True)
    obj["indexes"][1]["elements"][0]["length"] = 240
    obj["indexes"][1]["is_visible"] = False
    obj["check_constraints"] = [
        {"name": "actor_chk_1", "state": 1, "check_clause": "", "check_clause_utf8": "(`actor_id` > 0)"}
    ]
    a, b = _table(old), _table(new)
    d = diff_tables(a, b)
    assert not d.same_table and not d.equal
    assert d.table_changes == (Change("engine", "InnoDB", "MyISAM"), Change("collation_id", 255, 45))
    assert [(c.name, [(x.attribute, x.old, x.new) for x in c.changes]) for c in d.columns_retyped] == [
        ("last_name", [("column_type_utf8", "varchar(45)", "varchar(60)"), ("char_length", 180, 240)])
    ]
    assert [(c.name, [(x.attribute, x.old, x.new) for x in c.changes]) for c in d.columns_modified] == [
        ("last_name", [("is_nullable", False, True), ("default_value_null", False, True)])
    ]
    assert [(c.name, [(x.attribute, x.old, x.new) for x in c.changes]) for c in d.indexes_changed] == [
        (
            "idx_actor_last_name",
            [("is_visible", True, False), ("elements", [("last_name", 180, 2)], [("last_name", 240, 2)])],
        )
    ]
    assert d.check_constraints_added == ("actor_chk_1",)
    assert (d.columns_added, d.columns_dropped, d.columns_renamed, d.columns_reordered) == ((), (), (), ())
