"""Writing SDI back: the compact JSON MySQL stores (rapidjson ``Writer``) and ``ibd2sdi``'s output layout.

``to_json(doc)`` re-serializes the typed model (it does not reuse ``doc.raw``), member order and unknown members
included, so that read -> write -> read is the identity and an unmodified document comes back byte for byte.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Iterable

from binlake.sdi.model import SdiDocument, iter_members, load_json

# rapidjson::Writer escapes '"', '\\' and control characters; \b \f \n \r \t by name, the rest as \u00XX
# (upper-case hex); everything else, including non-ASCII, is written as UTF-8.
_ESCAPES = {i: f"\\u{i:04X}" for i in range(0x20)}
_ESCAPES.update({0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x5C: "\\\\"})


def _string(s: str) -> str:
    return '"' + s.translate(_ESCAPES) + '"'


def _base64(raw: bytes) -> str:
    """``base64_encode`` of mysys (``mysys/base64.cc``): MIME layout, a newline after every 76 characters."""
    return base64.encodebytes(raw).decode("ascii").rstrip("\n")


def _value(v: Any, out: list[str]) -> None:
    if v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif v is None:
        out.append("null")
    elif isinstance(v, int):
        out.append(str(v))
    elif isinstance(v, str):
        out.append(_string(v))
    elif isinstance(v, (bytes, bytearray)):
        out.append(_string(_base64(bytes(v))))
    elif isinstance(v, float):
        out.append(json.dumps(v))
    elif isinstance(v, dict):
        _members(v.items(), out)
    elif isinstance(v, (list, tuple)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _value(item, out)
        out.append("]")
    else:  # a model object
        _members(iter_members(v), out)


def _members(pairs: Iterable[tuple[str, Any]], out: list[str]) -> None:
    out.append("{")
    for i, (key, val) in enumerate(pairs):
        if i:
            out.append(",")
        out.append(_string(key))
        out.append(":")
        _value(val, out)
    out.append("}")


def _header_pairs(doc: SdiDocument) -> Iterable[tuple[str, Any]]:
    h = doc.header
    known = {
        "mysqld_version_id": h.mysqld_version_id,
        "dd_version": h.dd_version,
        "sdi_version": h.sdi_version,
        "dd_object_type": h.dd_object_type,
        "dd_object": doc.obj,
    }
    extra = dict(doc.extra)
    for key in doc.json_keys or tuple(known) + tuple(extra):
        yield key, known[key] if key in known else extra[key]


def to_json(doc: SdiDocument) -> str:
    """The document as MySQL writes it (``generic_serialize``): compact JSON, members in their original order."""
    out: list[str] = []
    _members(_header_pairs(doc), out)
    return "".join(out)


def pretty_json(text: str) -> str:
    """``rapidjson::PrettyWriter`` layout of a JSON text (4-space indent), as ``ibd2sdi`` prints by default."""
    return json.dumps(load_json(text), indent=4, ensure_ascii=False)


def to_ibd2sdi(records: Iterable[tuple[int, int, str]], pretty: bool = False) -> str:
    """``ibd2sdi`` output for (type, id, stored JSON) triples (``ibd2sdi::dump_sdi_rec``).

    With ``pretty=False`` (``ibd2sdi --skip-pretty``) each ``object`` is the stored string itself.
    """
    parts = ['["ibd2sdi"\n']
    for sdi_type, sdi_id, text in records:
        body = pretty_json(text) if pretty else text
        parts.append(f',\n{{\n\t"type": {sdi_type},\n\t"id": {sdi_id},\n\t"object":\n\t\t{body}\n}}\n')
    parts.append("]\n")
    return "".join(parts)
