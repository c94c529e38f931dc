"""Decoding the row images of WRITE/UPDATE/DELETE/PARTIAL_UPDATE rows events.

Each image is a NULL bitmap over the columns present in the image, then the values of the present, non-NULL
columns (``unpack_row``, sql/rpl_record.cc). A PARTIAL_UPDATE_ROWS_EVENT row has a shared image between the
before and the after image (WL#2955 section 4 F2): ``value_options`` (packed integer) and, when its
PARTIAL_JSON_UPDATES bit is set, ``partial_columns``, one bit per JSON column of the table (LSB first). A JSON
column flagged partial holds a length and a diff vector instead of a document (F3).
"""

from __future__ import annotations

import struct
from typing import Any, Optional

from binlake.binlog import constants as C
from binlake.binlog.columns import Decoder
from binlake.binlog.errors import BinlogError, CorruptEventError, TruncatedEventError
from binlake.binlog.events import ABSENT, JsonPartial, PartialUpdateRow, UpdateRow
from binlake.binlog.jsonvalue import read_diffs
from binlake.binlog.table import TableLayout

# what a value decoder may raise on bad bytes; turned into a typed error at the event boundary
DECODE_FAILURES = (struct.error, IndexError, ValueError, OverflowError, ArithmeticError, UnicodeError)


_TN = tuple.__new__


def decode_failure(exc: BaseException, what: str, size: int, hint: str = "", **where: Any) -> BinlogError:
    """The typed error for a Python error that bad bytes caused while reading ``what`` (``size`` bytes): an index
    or unpack past the end is a truncation, anything else a value that does not fit its format."""
    tail = f" ({hint})" if hint else ""
    if isinstance(exc, (IndexError, struct.error)):
        return TruncatedEventError(
            f"{what} runs past the end of the event{tail}",
            expected=f"{size} bytes to hold it",
            found="a field that continues past them",
            **where,
        )
    return CorruptEventError(
        f"{what} does not decode{tail}",
        expected="values in their columns' formats",
        found=str(exc)[:120] or "an invalid value",
        **where,
    )


def _image(layout: TableLayout, buf: bytes, pos: int, present: bytes) -> tuple[tuple, int]:
    """One row image: the NULL bitmap over the present columns, then a compiled reader for that pattern."""
    plan = layout.plan(present)
    nb = plan.null_bytes
    return plan.reader(int.from_bytes(buf[pos : pos + nb], "little"))(buf, pos + nb)


def _partial_json(length_bytes: int) -> Decoder:
    def dec(buf: bytes, pos: int) -> tuple[JsonPartial, int]:
        start = pos + length_bytes
        end = start + int.from_bytes(buf[pos:start], "little")
        if end > len(buf):
            raise TruncatedEventError(
                "partial JSON cell runs past the end of the event",
                expected=f"{end - start} bytes",
                found=f"{len(buf) - start} bytes",
            )
        raw = buf[start:end]
        return JsonPartial(raw, read_diffs(raw)), end

    return dec


def _partial_after(
    layout: TableLayout, buf: bytes, pos: int, end: int, present: bytes
) -> tuple[int, tuple[int, ...], Optional[bytes], tuple, int]:
    """Shared image + after image of one PARTIAL_UPDATE_ROWS row."""
    first = buf[pos]
    if first < 251:
        value_options, pos = first, pos + 1
    elif first == 252:
        value_options, pos = int.from_bytes(buf[pos + 1 : pos + 3], "little"), pos + 3
    elif first == 253:
        value_options, pos = int.from_bytes(buf[pos + 1 : pos + 4], "little"), pos + 4
    elif first == 254:
        value_options, pos = int.from_bytes(buf[pos + 1 : pos + 9], "little"), pos + 9
    else:
        raise CorruptEventError(
            "bad value_options in PARTIAL_UPDATE_ROWS shared image", expected="a length-encoded integer", found=first
        )
    if not value_options & C.PARTIAL_JSON_UPDATES:
        after, pos = _image(layout, buf, pos, present)
        return value_options, (), None, after, pos
    nbits = (len(layout.json_columns) + 7) >> 3
    bits = buf[pos : pos + nbits]
    pos += nbits
    if pos > end:
        raise TruncatedEventError("partial_columns bitmap runs past the end of the event")
    mask = int.from_bytes(bits, "little")
    partial = tuple(col for k, col in enumerate(layout.json_columns) if mask >> k & 1)
    if not partial:
        after, pos = _image(layout, buf, pos, present)
        return value_options, (), bits, after, pos
    plan = layout.plan(present)
    cols = plan.indexes if plan.indexes is not None else range(len(layout.columns))
    decs = plan.decoders
    decs = tuple(_partial_json(layout.columns[c].metadata) if c in partial else d for c, d in zip(cols, decs))
    nb = (len(decs) + 7) >> 3
    nulls = int.from_bytes(buf[pos : pos + nb], "little")
    pos += nb
    out = [ABSENT] * len(layout.columns)
    for k, (c, dec) in enumerate(zip(cols, decs)):
        if nulls >> k & 1:
            out[c] = None
        else:
            out[c], pos = dec(buf, pos)
    return value_options, partial, bits, tuple(out), pos


def _past_end(layout: TableLayout, row_start: int, pos: int, end: int) -> TruncatedEventError:
    hint = f" ({layout.decode_hint})" if layout.decode_hint else ""
    return TruncatedEventError(
        f"row runs past the end of the event{hint}",
        offset=row_start,
        expected=f"{pos - row_start} bytes",
        found=f"{end - row_start}",
    )


def _rows_loop(layout: TableLayout, buf: bytes, pos: int, end: int, present: bytes, rows: list, dicts: bool) -> None:
    """WRITE/DELETE rows: per row, the NULL bitmap picks the compiled reader of that NULL pattern."""
    plan = layout.plan(present)
    nb = plan.null_bytes
    get = (plan.dict_readers if dicts else plan.readers).get
    compile_reader = plan.dict_reader if dicts else plan.reader
    append = rows.append
    while pos < end:
        row_start = pos
        nulls = buf[pos] if nb == 1 else int.from_bytes(buf[pos : pos + nb], "little")
        read = get(nulls) or compile_reader(nulls)
        image, pos = read(buf, pos + nb)
        append(image)
        if pos > end:
            raise _past_end(layout, row_start, pos, end)
        if pos == row_start:
            raise CorruptEventError("row image of zero bytes", offset=row_start)


def _updates_loop(
    layout: TableLayout, buf: bytes, pos: int, end: int, present: bytes, present_after: bytes, rows: list, dicts: bool
) -> None:
    """UPDATE rows: a before image, then an after image (each with its own columns-present bitmap)."""
    plan, plan_after = layout.plan(present), layout.plan(present_after)
    nb, nb_after = plan.null_bytes, plan_after.null_bytes
    if dicts:
        get, get_after = plan.dict_readers.get, plan_after.dict_readers.get
        compile_reader, compile_after = plan.dict_reader, plan_after.dict_reader
    else:
        get, get_after = plan.readers.get, plan_after.readers.get
        compile_reader, compile_after = plan.reader, plan_after.reader
    append = rows.append
    while pos < end:
        row_start = pos
        nulls = int.from_bytes(buf[pos : pos + nb], "little")
        read = get(nulls) or compile_reader(nulls)
        before, pos = read(buf, pos + nb)
        nulls = int.from_bytes(buf[pos : pos + nb_after], "little")
        read = get_after(nulls) or compile_after(nulls)
        after, pos = read(buf, pos + nb_after)
        append(_TN(UpdateRow, (before, after)))
        if pos > end:
            raise _past_end(layout, row_start, pos, end)
        if pos == row_start:
            raise CorruptEventError("row image of zero bytes", offset=row_start)


def decode_rows(
    layout: TableLayout,
    type_code: int,
    buf: bytes,
    pos: int,
    end: int,
    present: bytes,
    present_after: bytes,
    dicts: bool = False,
) -> tuple:
    """All rows of one rows event body, ``buf[pos:end]`` (``buf`` must end at ``end``: the fence).

    Returns images (WRITE/DELETE), :class:`UpdateRow` (UPDATE) or :class:`PartialUpdateRow` (PARTIAL_UPDATE).
    ``dicts``: WRITE/UPDATE/DELETE images as ``{name: value}`` of their present columns instead of tuples (the
    row-change fast path, :func:`binlake.binlog.api.iter_row_changes`; PARTIAL_UPDATE rows stay tuples).
    Raises TruncatedEventError / CorruptEventError on bad bytes (offsets relative to ``buf``).
    """
    rows: list[Any] = []
    append = rows.append
    start = pos
    try:
        if type_code == C.PARTIAL_UPDATE_ROWS_EVENT:
            while pos < end:
                row_start = pos
                before, pos = _image(layout, buf, pos, present)
                vo, cols, bits, after, pos = _partial_after(layout, buf, pos, end, present_after)
                append(PartialUpdateRow(before, after, vo, cols, bits))
                if pos > end:
                    raise _past_end(layout, row_start, pos, end)
        elif type_code in C.UPDATE_ROWS_TYPES:
            _updates_loop(layout, buf, pos, end, present, present_after, rows, dicts)
        else:
            _rows_loop(layout, buf, pos, end, present, rows, dicts)
    except DECODE_FAILURES as exc:
        raise decode_failure(
            exc, f"row {len(rows)} of `{layout.db}`.`{layout.table}`", end - start, layout.decode_hint, offset=start
        ) from None
    except BinlogError as exc:
        if exc.offset is None:
            exc.offset = start
        raise
    return tuple(rows)
