"""The names binlake hands Great Expectations: letters, digits, ``_``, ``$`` and ``-`` only.

GX writes suite, data asset, column and run names into its stores' file paths and into the Data Docs pages
(headings, sidebar links, inline scripts) without escaping them everywhere, and a binlog or an ``.ibd`` may name
a database, table or column with markup (``<img src=x onerror=...>``), ``/`` or ``.``. So no such name reaches GX
as it is: a silver table's suite is named by its silver folder (``silver.<folder>``,
:func:`binlake.quality.suites.silver_table_name`), and a column or run name keeps its letters, digits, ``_``,
``$`` and ``-`` while every other character becomes ``~XX`` per UTF-8 byte, the escape of the silver folders.
That is injective (``~`` itself is escaped) and inert in every context of a page (text, attribute, script, URL)
and of a path. Values reach GX only as expectation arguments (ENUM members, SET patterns, bounds), which GX
escapes; the stored run samples no values (binlake's own summary shows samples from a second, unstored run).
"""

from __future__ import annotations

_KEPT = frozenset("_$-")


def _kept(ch: str) -> bool:
    return ch.isalnum() or ch in _KEPT


def gx_name(text: str) -> str:
    """``text`` with every character but letters, digits, ``_``, ``$`` and ``-`` as ``~XX`` per UTF-8 byte."""
    if all(_kept(ch) for ch in text):
        return text
    return "".join(
        ch if _kept(ch) else "".join(f"~{b:02X}" for b in ch.encode("utf-8", "surrogatepass")) for ch in text
    )
