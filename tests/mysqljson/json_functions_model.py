"""An independent model of MySQL's JSON modification functions, written from the MySQL reference manual
(section "Functions That Modify JSON Values"), for checking apply_json_diffs against.

Paths are tuples of legs: ("member", name) or ("cell", index). Documents are plain Python JSON values; each
function returns a new document and never mutates its input. Only the behaviour the property tests exercise is
modelled (no wildcards, no auto-wrapping of scalars).
"""

from __future__ import annotations

import copy

Leg = tuple[str, object]
_MISSING = object()


def lookup(doc: object, legs: tuple[Leg, ...]) -> object:
    """The value at an exact path, or _MISSING."""
    node = doc
    for kind, key in legs:
        if kind == "member" and isinstance(node, dict) and key in node:
            node = node[key]
        elif kind == "cell" and isinstance(node, list) and 0 <= key < len(node):  # type: ignore[operator]
            node = node[key]  # type: ignore[index]
        else:
            return _MISSING
    return node


def exists(doc: object, legs: tuple[Leg, ...]) -> bool:
    return lookup(doc, legs) is not _MISSING


def json_replace(doc: object, legs: tuple[Leg, ...], value: object) -> object:
    """ "Replaces existing values in a JSON document ... A path-value pair for a nonexisting path is ignored."""
    if not exists(doc, legs):
        return doc
    result = copy.deepcopy(doc)
    parent = lookup(result, legs[:-1])
    parent[legs[-1][1]] = copy.deepcopy(value)  # type: ignore[index]
    return result


def _add(doc: object, legs: tuple[Leg, ...], value: object) -> object:
    """The 'nonexisting path' rule of JSON_SET / JSON_INSERT: a member not present in an existing object is added;
    a position past the end of an existing array extends the array with the value."""
    parent = lookup(doc, legs[:-1])
    kind, key = legs[-1]
    if kind == "member" and isinstance(parent, dict):
        result = copy.deepcopy(doc)
        lookup(result, legs[:-1])[key] = copy.deepcopy(value)  # type: ignore[index]
        return result
    if kind == "cell" and isinstance(parent, list):
        result = copy.deepcopy(doc)
        lookup(result, legs[:-1]).append(copy.deepcopy(value))  # type: ignore[union-attr]
        return result
    return doc


def json_set(doc: object, legs: tuple[Leg, ...], value: object) -> object:
    """ "Inserts or updates data": replace when the path exists, else add as JSON_INSERT does."""
    if exists(doc, legs):
        return json_replace(doc, legs, value)
    return _add(doc, legs, value)


def json_insert(doc: object, legs: tuple[Leg, ...], value: object) -> object:
    """ "Inserts data without replacing existing values"."""
    if exists(doc, legs):
        return doc
    return _add(doc, legs, value)


def json_array_insert(doc: object, legs: tuple[Leg, ...], value: object) -> object:
    """ "If the path identifies an array element, the value is inserted at that position, shifting following values
    to the right. If the path identifies a position past the end of the array, the value is inserted at the end.
    Pairs for which the path does not identify any array in the document are ignored.\""""
    kind, index = legs[-1]
    parent = lookup(doc, legs[:-1])
    if kind != "cell" or not isinstance(parent, list):
        return doc
    result = copy.deepcopy(doc)
    lookup(result, legs[:-1]).insert(min(index, len(parent)), copy.deepcopy(value))  # type: ignore[union-attr,arg-type,type-var]
    return result


def json_remove(doc: object, legs: tuple[Leg, ...]) -> object:
    """ "Removes data from a JSON document ... It is not an error if the element to be removed does not exist.\""""
    if not exists(doc, legs):
        return doc
    result = copy.deepcopy(doc)
    del lookup(result, legs[:-1])[legs[-1][1]]  # type: ignore[attr-defined]
    return result


def mysql_key_order(doc: object) -> object:
    """The document with every object's members in MySQL's storage order: shorter UTF-8 keys first, then bytes."""
    if isinstance(doc, dict):
        keys = sorted(doc, key=lambda k: (len(k.encode("utf-8")), k.encode("utf-8")))
        return {key: mysql_key_order(doc[key]) for key in keys}
    if isinstance(doc, list):
        return [mysql_key_order(item) for item in doc]
    return doc


def all_paths(doc: object, prefix: tuple[Leg, ...] = ()) -> list[tuple[tuple[Leg, ...], object]]:
    """Every (path, value) below the root."""
    found: list[tuple[tuple[Leg, ...], object]] = []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, item in items:
        leg: Leg = ("member", key) if isinstance(doc, dict) else ("cell", key)
        found.append((prefix + (leg,), item))
        found.extend(all_paths(item, prefix + (leg,)))
    return found
