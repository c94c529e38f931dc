"""JSON documents of the workload and the partial edits made to them, applied with plain logical operations.

An :class:`Edit` is one logical JSON diff (WL#10570): REPLACE an existing value, INSERT a new object member
(``JSON_INSERT`` / ``JSON_SET`` on a new key) or a new array element (``JSON_ARRAY_INSERT``; an index equal to
the array length appends), REMOVE a member or element (``JSON_REMOVE``). The generator only makes edits whose
paths exist (or, for INSERT, whose parent exists and member is absent), so they apply on MySQL exactly as here.
:func:`apply_edit` is the ground truth's own implementation; it deliberately does not use
``binlake.mysqljson.apply_json_diffs``. Documents are never changed in place: an edit makes a new version
sharing every untouched subtree (which lets :mod:`binlake.generate.jsonbin` reuse their encodings).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

REPLACE, INSERT, REMOVE = 0, 1, 2  # enum_json_diff_operation
OPERATION_NAMES = {REPLACE: "REPLACE", INSERT: "INSERT", REMOVE: "REMOVE"}

Path = tuple[Any, ...]  # str member names and int array indexes, from the document root


@dataclass(frozen=True, slots=True)
class Edit:
    operation: int
    path: Path
    value: Any = None  # None (JSON null) for REMOVE too; REMOVE carries no value

    @property
    def path_text(self) -> str:
        return path_text(self.path)


def path_text(path: Path) -> str:
    """MySQL's text form of a simple path: ``$.items[2].qty`` (member names here are plain identifiers)."""
    out = ["$"]
    for leg in path:
        out.append(f"[{leg}]" if isinstance(leg, int) else f".{leg}")
    return "".join(out)


def apply_edit(doc: Any, edit: Edit) -> Any:
    """The document after ``edit``: a new root, with new containers along the edited path and every other
    subtree shared with ``doc`` (path copying; ``doc`` itself is never changed). The root is never edited."""
    root = _shallow(doc)
    parent = root
    for leg in edit.path[:-1]:
        child = _shallow(parent[leg])
        parent[leg] = child
        parent = child
    last = edit.path[-1]
    if edit.operation == REPLACE:
        if (isinstance(last, int) and not 0 <= last < len(parent)) or (isinstance(last, str) and last not in parent):
            raise ValueError(f"REPLACE of a missing path {edit.path_text}")
        parent[last] = edit.value
    elif edit.operation == INSERT:
        if isinstance(last, int):
            parent.insert(last, edit.value)
        elif last in parent:
            raise ValueError(f"INSERT of an existing member {edit.path_text}")
        else:
            parent[last] = edit.value
    else:
        del parent[last]
    return root


def _shallow(container: Any) -> Any:
    return dict(container) if type(container) is dict else list(container)


WORDS = (
    "alpha",
    "blue",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "iris",
    "jade",
    "kestrel",
    "lumen",
    "maple",
    "nova",
    "onyx",
    "pine",
    "quartz",
    "river",
    "sierra",
    "tundra",
    "umber",
    "vale",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
    "Zürich",
    "café",
    "naïve",
    "東京",
)
COLORS = ("red", "green", "blue", "black", "white", "silver")
CARRIERS = ("dhl", "ups", "fedex", "postnl", "laposte")
CITIES = ("Amsterdam", "Berlin", "Lisbon", "Montréal", "Oslo", "São Paulo", "Tokyo", "Zagreb")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(WORDS[rng.randrange(len(WORDS))] for _ in range(n))


def product_attributes(rng: random.Random) -> dict:
    """A small nested JSON document for ``products.attributes``."""
    doc = {
        "color": COLORS[rng.randrange(len(COLORS))],
        "dims": {"w": rng.randrange(1, 200), "h": rng.randrange(1, 200), "unit": "cm"},
        "tags": [_words(rng, 1) for _ in range(rng.randrange(0, 4))],
        "rating": rng.randrange(0, 51) / 10,
        "in_stock": rng.random() < 0.8,
    }
    if rng.random() < 0.3:
        doc["warranty"] = None
    if rng.random() < 0.3:
        doc["big"] = rng.randrange(2**40, 2**62)
    return doc


def item_pool(rng: random.Random, size: int = 2000) -> list[dict]:
    """Order lines that many orders share (the same product, quantity and price), as real order documents do.

    Documents never change in place, so one line object can sit in many documents; the binary JSON encoder
    then encodes it once."""
    return [
        {
            "sku": rng.randrange(1, 10**9),
            "qty": rng.randrange(1, 6),
            "price": rng.randrange(99, 99999) / 100,
            "tags": [COLORS[rng.randrange(len(COLORS))] for _ in range(rng.randrange(0, 3))],
        }
        for _ in range(size)
    ]


def order_document(
    rng: random.Random, customer_id: int, json_size: int, pool: list[dict], shared: dict | None = None
) -> dict:
    """An order document of roughly ``json_size`` bytes of JSON text: nested objects, an array of order lines
    drawn from ``pool`` (see :func:`item_pool`). Sub-objects with few variants (customer, payment, shipping,
    flags) are taken from ``shared`` when given, as identical values are shared (never changed in place)."""
    n_items = max(1, json_size // 110)
    items = [pool[rng.randrange(len(pool))] for _ in range(rng.randrange(max(1, n_items // 2), n_items + 1))]
    city = CITIES[rng.randrange(len(CITIES))]
    method = ("card", "iban", "voucher")[rng.randrange(3)]
    carrier = CARRIERS[rng.randrange(len(CARRIERS))]
    gift, priority = rng.random() < 0.2, rng.randrange(0, 4)
    parts = {} if shared is None else shared
    return {
        "customer": _shared(parts, ("customer", customer_id, city), lambda: {"id": customer_id, "city": city}),
        "items": items,
        "payment": _shared(parts, ("payment", method), lambda: {"method": method, "captured": False}),
        "shipping": _shared(parts, ("shipping", carrier), lambda: {"carrier": carrier, "events": []}),
        "flags": _shared(parts, ("flags", gift, priority), lambda: {"gift": gift, "priority": priority}),
        "note": _words(rng, rng.randrange(1, 6)),
    }


def _shared(parts: dict, key: tuple, make) -> dict:
    got = parts.get(key)
    if got is None:
        got = parts[key] = make()
    return got


def _new_item(rng: random.Random) -> dict:
    return {"sku": rng.randrange(1, 10**9), "qty": 1, "price": rng.randrange(99, 9999) / 100, "tags": []}


def order_edits(rng: random.Random, doc: dict, max_edits: int) -> tuple[dict, list[Edit]]:
    """(new document, 1..max_edits edits of it); each edit is chosen on the result of the previous ones, as
    nested JSON_SET/JSON_REMOVE calls see each other. Covers REPLACE, INSERT (member and array element) and
    REMOVE at nested paths."""
    edits: list[Edit] = []
    if rng.random() < 0.06:
        # JSON_SET(doc, '$.items', <new array>, '$.items', <bigger array>): the diffs are larger than the document,
        # so the server logs the full document instead (WL#2955 FR12)
        for n in (len(doc["items"]) * 2 + 2, len(doc["items"]) + 3):
            edits.append(Edit(REPLACE, ("items",), [_new_item(rng) for _ in range(n)]))
            doc = apply_edit(doc, edits[-1])
        return doc, edits
    for _ in range(rng.randrange(1, max_edits + 1)):
        edit = _one_order_edit(rng, doc)
        doc = apply_edit(doc, edit)
        edits.append(edit)
    return doc, edits


def _one_order_edit(rng: random.Random, doc: dict) -> Edit:
    items = doc["items"]
    roll = rng.randrange(10)
    if roll == 0:
        return Edit(REPLACE, ("payment", "captured"), not doc["payment"]["captured"])
    if roll == 1 and items:
        i = rng.randrange(len(items))
        return Edit(REPLACE, ("items", i, "qty"), rng.randrange(1, 9))
    if roll == 2:
        events = doc["shipping"]["events"]
        event = {"at": f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}", "code": rng.randrange(100)}
        return Edit(INSERT, ("shipping", "events", len(events)), event)  # JSON_ARRAY_APPEND shape
    if roll == 3:
        if "tracking" in doc["shipping"]:
            return Edit(REPLACE, ("shipping", "tracking"), f"TRK{rng.randrange(10**9)}")
        return Edit(INSERT, ("shipping", "tracking"), f"TRK{rng.randrange(10**9)}")  # JSON_SET of a new key
    if roll == 4 and items:
        i = rng.randrange(len(items))
        tags = items[i]["tags"]
        if tags:
            return Edit(REMOVE, ("items", i, "tags", rng.randrange(len(tags))))
        return Edit(INSERT, ("items", i, "tags", 0), COLORS[rng.randrange(len(COLORS))])  # JSON_ARRAY_INSERT
    if roll == 5:
        if "gift" in doc["flags"]:
            return Edit(REMOVE, ("flags", "gift"))
        return Edit(INSERT, ("flags", "gift"), True)
    if roll == 6 and len(items) > 1:
        return Edit(REMOVE, ("items", rng.randrange(len(items))))
    if roll == 7:
        return Edit(INSERT, ("items", rng.randrange(len(items) + 1)), _new_item(rng))
    if roll == 8:
        return Edit(REPLACE, ("note",), _words(rng, rng.randrange(1, 4)))
    return Edit(REPLACE, ("flags", "priority"), rng.randrange(0, 4))


def attribute_edits(rng: random.Random, doc: dict) -> tuple[dict, list[Edit]]:
    """(new document, one or two edits of a product's attributes: JSON_SET / JSON_REMOVE shapes)."""
    edits = []
    for _ in range(rng.randrange(1, 3)):
        roll = rng.randrange(4)
        if roll == 0:
            edit = Edit(REPLACE, ("rating",), rng.randrange(0, 51) / 10)
        elif roll == 1:
            edit = Edit(REPLACE, ("dims", "w"), rng.randrange(1, 200))
        elif roll == 2 and doc["tags"]:
            edit = Edit(REMOVE, ("tags", len(doc["tags"]) - 1))
        else:
            edit = Edit(INSERT, ("tags", 0), _words(rng, 1))
        doc = apply_edit(doc, edit)
        edits.append(edit)
    return doc, edits
