"""The generator's model pieces: path-copying JSON edits and the incremental binary JSON encoder."""

from __future__ import annotations

import random

from binlake.generate import jsondocs
from binlake.generate.jsonbin import JsonEncoder
from binlake.generate.jsondocs import INSERT, REMOVE, REPLACE, Edit, apply_edit
from binlake.generate.emit import json_diffs
from binlake.mysqljson import encode, write_diffs


def test_apply_edit_copies_the_path_and_shares_the_rest():
    doc = {"a": {"b": [1, 2, 3]}, "c": {"d": "x"}}
    new = apply_edit(doc, Edit(INSERT, ("a", "b", 1), 9))
    assert doc == {"a": {"b": [1, 2, 3]}, "c": {"d": "x"}}              # the old version is untouched
    assert new == {"a": {"b": [1, 9, 2, 3]}, "c": {"d": "x"}} and new["c"] is doc["c"]
    assert apply_edit(new, Edit(REMOVE, ("a", "b", 0)))["a"]["b"] == [9, 2, 3]
    assert apply_edit(new, Edit(REPLACE, ("c", "d"), [True]))["c"] == {"d": [True]}
    assert apply_edit(new, Edit(INSERT, ("a", "b", 4), 0))["a"]["b"] == [1, 9, 2, 3, 0]   # append at the end
    assert Edit(INSERT, ("items", 2, "tags", 0), 1).path_text == "$.items[2].tags[0]"


def test_incremental_encoder_matches_the_reference_on_edited_documents():
    rng = random.Random(7)
    enc = JsonEncoder()
    checked = 0
    pool = jsondocs.item_pool(rng, 50)
    for size in (150, 1000, 30_000, 90_000):                             # small and large (>64 KiB) containers
        doc = jsondocs.order_document(rng, 1, size, pool)
        for _ in range(30):
            assert enc.encode(doc) == encode(doc)
            doc, edits = jsondocs.order_edits(rng, doc, 4)
            assert enc.diffs(json_diffs(tuple(edits))) == write_diffs(json_diffs(tuple(edits)))
            checked += 1
    for _ in range(50):
        doc = jsondocs.product_attributes(rng)
        assert enc.encode(doc) == encode(doc)
        doc, _ = jsondocs.attribute_edits(rng, doc)
        assert enc.encode(doc) == encode(doc)
    edge = {"": [], "e": {}, "i": [2**15, -2**15 - 1, 2**31, -2**63, 2**64 - 1, 0.1, None, False, "é" * 200]}
    assert enc.encode(edge) == encode(edge) and checked == 120
