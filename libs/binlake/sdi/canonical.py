"""Canonical form and fingerprint of a table definition (for CR-03 comparison and the schema registry).

The canonical form is the table's SDI with what changes without any DDL left out: timestamps, server and DD
versions, and the storage engine's private data (``se_private_data``/``se_private_id``: table/index ids, root
pages, transaction ids). Two SDIs of the same definition written by different servers (e.g. 8.0 and 8.4) or after
a dump and reload therefore have the same canonical form and fingerprint.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from binlake.sdi.model import SPECS, Table, iter_members

# members that change without a DDL statement (per object kind; "*" applies to all)
VOLATILE_MEMBERS: dict[str, frozenset[str]] = {
    "*": frozenset({"se_private_data", "se_private_id"}),
    "Table": frozenset({"created", "last_altered", "mysql_version_id", "last_checked_for_upgrade_version_id"}),
}


def canonical(obj: Any) -> Any:
    """JSON-compatible canonical value of a model object (members in SDI order, volatile members dropped)."""
    if type(obj) in SPECS:
        skip = VOLATILE_MEMBERS["*"] | VOLATILE_MEMBERS.get(type(obj).__name__, frozenset())
        return {k: canonical(v) for k, v in iter_members(obj) if k not in skip}
    if isinstance(obj, (tuple, list)):
        return [canonical(v) for v in obj]
    if isinstance(obj, (bytes, bytearray)):
        return base64.b64encode(bytes(obj)).decode("ascii")
    if isinstance(obj, dict):
        return {k: canonical(v) for k, v in obj.items()}
    return obj


def canonical_json(table: Table) -> str:
    """The canonical form as compact JSON with sorted keys (stable across Python versions)."""
    return json.dumps(canonical(table), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(table: Table) -> str:
    """SHA-256 (hex) of :func:`canonical_json`: equal exactly when two definitions are equal (CR-03)."""
    return hashlib.sha256(canonical_json(table).encode("utf-8")).hexdigest()


def definitions_equal(a: Table, b: Table) -> bool:
    """CR-03: do two SDIs describe the same table definition?"""
    return canonical(a) == canonical(b)
