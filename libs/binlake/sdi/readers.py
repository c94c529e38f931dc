"""Reading SDI from files: ``.ibd`` tablespaces, ``ibd2sdi`` output, ``.sdi`` files and single SDI JSON records.

The decoding is in :mod:`binlake.sdi.ibd` and :mod:`binlake.sdi.model` (pure functions of bytes); this module
only opens files (``.ibd`` through ``mmap``, so huge tablespaces are not read whole) and recognises the format.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from binlake.sdi.dd_types import SDI_TYPE_TABLE, SDI_TYPE_TABLESPACE
from binlake.sdi.errors import SdiError, SdiFormatError
from binlake.sdi.ibd import read_ibd_sdi
from binlake.sdi.model import SdiDocument, load_json, parse_sdi, parse_sdi_object
from binlake.sdi.writer import to_json

SDI_TYPES = {"Table": SDI_TYPE_TABLE, "Tablespace": SDI_TYPE_TABLESPACE}


@dataclass(frozen=True, slots=True)
class SdiEntry:
    """One SDI record from any source: its key (type, id; id is None when the source has none) and the JSON text
    exactly as MySQL stored it."""

    sdi_type: int
    sdi_id: int | None
    text: str
    source: str = field(default="", compare=False)

    def document(self) -> SdiDocument:
        return parse_sdi(self.text, self.source)


def entries_from_ibd(buf: bytes | memoryview, source: str = "", verify_checksums: bool = True) -> list[SdiEntry]:
    """SDI entries of a tablespace image."""
    _, records = read_ibd_sdi(buf, source, verify_checksums)
    return [SdiEntry(r.sdi_type, r.sdi_id, r.text(), source) for r in records]


def entries_from_ibd2sdi(text: str, source: str = "") -> list[SdiEntry]:
    """Entries of ``ibd2sdi`` output (``["ibd2sdi", {"type": T, "id": ID, "object": {...}}, ...]``), pretty-printed
    or not. The stored string is rebuilt in MySQL's compact form, which is exact for server-written SDI."""
    data = load_json(text, source)
    if not isinstance(data, list) or not data or data[0] != "ibd2sdi":
        raise SdiFormatError(source, "$[0]", 'expected ibd2sdi output: a JSON array starting with "ibd2sdi"')
    out = []
    for i, item in enumerate(data[1:], start=1):
        if not isinstance(item, dict) or not isinstance(item.get("type"), int) or not isinstance(item.get("id"), int):
            raise SdiFormatError(source, f"$[{i}]", 'expected {"type": int, "id": int, "object": {...}}')
        if "object" not in item:
            raise SdiFormatError(source, f"$[{i}].object", "missing (output of ibd2sdi --skip-data has no SDI)")
        doc = parse_sdi_object(item["object"], f"{source}[{i}]")
        out.append(SdiEntry(item["type"], item["id"], to_json(doc), source))
    return out


def entry_from_json(text: str, source: str = "") -> SdiEntry:
    """A single SDI JSON document (a ``.sdi`` file or one extracted record)."""
    doc = parse_sdi(text, source)
    return SdiEntry(SDI_TYPES.get(doc.header.dd_object_type, 0), _sdi_file_id(source), text, source)


def _sdi_file_id(source: str) -> int | None:
    """The object id in a ``.sdi`` file name (``<name>_<id>.sdi``, ``sdi_file::sdi_filename``)."""
    stem = Path(source).stem
    tail = stem.rsplit("_", 1)[-1]
    return int(tail) if "_" in stem and tail.isdigit() and source.endswith(".sdi") else None


def entries_from_bytes(data: bytes | memoryview, source: str = "", verify_checksums: bool = True) -> list[SdiEntry]:
    """Recognise the format by content: ``[`` ibd2sdi output, ``{`` one SDI JSON document, else a tablespace."""
    head = bytes(data[:64]).lstrip()
    if head[:1] in (b"[", b"{"):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SdiFormatError(source, "$", f"not UTF-8 at byte {exc.start}") from None
        return entries_from_ibd2sdi(text, source) if head[:1] == b"[" else [entry_from_json(text, source)]
    return entries_from_ibd(data, source, verify_checksums)


def read_entries(path: str | os.PathLike[str], verify_checksums: bool = True) -> list[SdiEntry]:
    """All SDI entries of one file (any supported format)."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise SdiError(f"{source}: empty file; expected a .ibd tablespace, ibd2sdi output or SDI JSON")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return entries_from_bytes(mm, source, verify_checksums)
    except OSError as exc:
        raise SdiError(f"{source}: cannot read ({exc.strerror or exc})") from None


SDI_SUFFIXES = (".ibd", ".sdi", ".json")


def iter_sdi_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Files named by ``paths``; folders are searched recursively for ``.ibd``, ``.sdi`` and ``.json`` files."""
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*") if q.is_file() and q.suffix.lower() in SDI_SUFFIXES)
        else:
            yield p
