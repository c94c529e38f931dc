"""JSON text: MySQL's rendering of a JSON value (``SELECT j``), parsing JSON text, and plain/canonical forms.

Rendering mirrors ``wrapper_to_string`` in sql/json_dom.cc: ``", "`` and ``": "`` separators, members in stored
order, ``double_quote`` escaping (``\\b \\t \\n \\f \\r \\" \\\\``, other control characters as ``\\u00xx``,
everything else raw UTF-8), doubles through ``my_gcvt`` (shortest round-trip digits) with ``.0`` appended when
neither a point nor an exponent was printed, DECIMAL with its scale, temporals with 6 fractional digits (DATE
without time), other opaque values as ``"base64:typeNN:..."``.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from fractions import Fraction
from json.encoder import encode_basestring

from binlake.mysqljson.binary import JSON_DOCUMENT_MAX_DEPTH, key_sort_key
from binlake.mysqljson.errors import JsonDepthError, JsonEncodeError, JsonTextSyntaxError
from binlake.mysqljson.values import JsonDate, JsonDatetime, JsonOpaque, JsonTime

MY_GCVT_MAX_FIELD_WIDTH = 34  # DBL_DIG + 4 + max(5, MAX_DECPT_FOR_F_FORMAT)
MAX_DECPT_FOR_F_FORMAT = 15  # DBL_DIG

_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1
_DECIMAL_MAX_DIGITS = 65


def format_double(x: float) -> str:
    """MySQL's JSON text of a double: ``my_gcvt(x, MY_GCVT_ARG_DOUBLE, MY_GCVT_MAX_FIELD_WIDTH)`` plus ``.0``.

    ``dtoa`` mode 4 with 33+ digits yields the shortest round-trip digits, which are Python's ``repr`` digits;
    the choice between 'f' and 'e' formats and the exponent spelling (``1e20``, ``1.5e-7``) follow my_gcvt.
    """
    if not math.isfinite(x):
        return "0.0"  # dtoa overflow: my_gcvt prints "0"
    text = _gcvt(x)
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def _gcvt(x: float) -> str:
    negative = math.copysign(1.0, x) < 0
    mantissa, _, exp_text = repr(abs(x)).partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    decpt = len(int_part) + (int(exp_text) if exp_text else 0)
    if not digits:  # zero: dtoa gives "0" with decpt 1
        digits, decpt = "0", 1
    else:
        decpt -= len(int_part + frac_part) - len((int_part + frac_part).lstrip("0"))
        digits = digits.rstrip("0")
    width = MY_GCVT_MAX_FIELD_WIDTH - (1 if x < 0 else 0)
    length = len(digits)
    if decpt <= 0:
        f_len = length - decpt + 2
    elif decpt < length:
        f_len = length + 1
    else:
        f_len = decpt
    have_space = f_len <= width
    exp_len = 1 + (decpt >= 101 or decpt <= -99) + (decpt >= 11 or decpt <= -9)
    force_e = decpt <= 0 and width <= 2 - decpt and width >= 3 + exp_len
    use_f = (
        have_space
        or (decpt <= width and (decpt >= -1 or (decpt == -2 and (length > 1 or not force_e))) and not force_e)
    ) and (
        not have_space or (decpt >= -MAX_DECPT_FOR_F_FORMAT + 1 and (decpt <= MAX_DECPT_FOR_F_FORMAT or length > decpt))
    )
    sign = "-" if negative else ""
    if use_f:
        if decpt <= 0:
            return f"{sign}0.{'0' * -decpt}{digits}"
        if decpt < length:
            return f"{sign}{digits[:decpt]}.{digits[decpt:]}"
        return f"{sign}{digits}{'0' * (decpt - length)}"
    exponent = decpt - 1
    body = digits[0] + ("." + digits[1:] if length > 1 else "")
    return f"{sign}{body}e{exponent}"


def format_decimal(value: Decimal) -> str:
    """``decimal2string``: plain notation keeping the scale (``1.50``, ``0.000000001``)."""
    return format(value, "f")


def to_text(value: object) -> str:
    """MySQL's text of a JSON value, exactly as ``SELECT j`` prints a JSON column."""
    parts: list[str] = []
    try:
        _render(value, parts.append, 0)
    except TypeError as exc:  # encode_basestring of a non-string object key
        raise JsonEncodeError(f"value has no MySQL JSON text: {exc}") from None
    return "".join(parts)


def _render(value: object, out, depth: int) -> None:
    kind = type(value)
    if kind is str:
        out(encode_basestring(value))
    elif kind is dict:
        if depth + 1 > JSON_DOCUMENT_MAX_DEPTH:
            raise JsonDepthError(f"JSON document exceeds the maximum depth of {JSON_DOCUMENT_MAX_DEPTH}")
        if not value:
            out("{}")
            return
        out("{")
        first = True
        for key, item in value.items():  # type: ignore[attr-defined]
            if first:
                first = False
            else:
                out(", ")
            out(encode_basestring(key))
            out(": ")
            _render(item, out, depth + 1)
        out("}")
    elif kind is list or kind is tuple:
        if depth + 1 > JSON_DOCUMENT_MAX_DEPTH:
            raise JsonDepthError(f"JSON document exceeds the maximum depth of {JSON_DOCUMENT_MAX_DEPTH}")
        if not value:
            out("[]")
            return
        out("[")
        first = True
        for item in value:  # type: ignore[attr-defined]
            if first:
                first = False
            else:
                out(", ")
            _render(item, out, depth + 1)
        out("]")
    elif kind is int:
        out(str(value))
    elif kind is bool:
        out("true" if value else "false")
    elif value is None:
        out("null")
    elif kind is float:
        out(format_double(value))  # type: ignore[arg-type]
    else:
        out(_scalar_text(value))


def _scalar_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return format_double(float(value))
    if isinstance(value, str):
        return encode_basestring(str(value))
    if isinstance(value, Decimal):
        return format_decimal(value)
    if isinstance(value, (JsonDate, JsonDatetime, JsonTime, JsonOpaque)):
        return encode_basestring(value.to_text())
    raise JsonEncodeError(f"{type(value).__name__} value {value!r} has no MySQL JSON form")


def to_python(value: object) -> object:
    """Plain JSON-able Python: what a JSON reader of MySQL's text gets (``json.loads(to_text(value))``).

    DECIMAL becomes float, temporal and other opaque values become their MySQL strings.
    """
    kind = type(value)
    if kind is dict:
        return {key: to_python(item) for key, item in value.items()}  # type: ignore[attr-defined]
    if kind is list or kind is tuple:
        return [to_python(item) for item in value]  # type: ignore[attr-defined]
    if kind in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (JsonDate, JsonDatetime, JsonTime, JsonOpaque)):
        return value.to_text()
    return json.loads(_scalar_text(value))


def canonical(value: object) -> object:
    """A hashable form in which JSON values that MySQL's ``=`` finds equal are equal.

    Numbers compare by exact value across int/double/DECIMAL, booleans are not numbers, object member order
    does not matter, temporals compare by type and value, opaque values by type and bytes.
    """
    kind = type(value)
    if kind is dict:
        return ("object", frozenset((key, canonical(item)) for key, item in value.items()))  # type: ignore[attr-defined]
    if kind is list or kind is tuple:
        return ("array", tuple(canonical(item) for item in value))  # type: ignore[attr-defined]
    if kind is str:
        return ("string", value)
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("boolean", bool(value))
    if isinstance(value, (int, float, Decimal)):
        return ("number", Fraction(value) if math.isfinite(value) else float(value))
    if isinstance(value, (JsonDate, JsonDatetime, JsonTime)):
        return ("temporal", value.field_type, value.packed())
    if isinstance(value, JsonOpaque):
        return ("opaque", value.field_type, bytes(value.data))
    raise JsonEncodeError(f"{type(value).__name__} value {value!r} has no MySQL JSON form")


# --------------------------------------------------------------------------------------------------- parsing


def _parse_float(text: str) -> object:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} is too big to be stored in a double")
    if format_double(number) == text:
        return number
    exact = Decimal(text)
    if len(exact.as_tuple().digits) <= _DECIMAL_MAX_DIGITS and format_decimal(exact) == text:
        return exact  # e.g. a DECIMAL's "1.50": keep what a double would lose
    return number


def _parse_int(text: str) -> object:
    number = int(text)
    if _INT64_MIN <= number <= _UINT64_MAX:
        return Decimal(text) if text == "-0" else number  # "-0" is a DECIMAL's text; an int would print "0"
    if len(text.lstrip("-")) <= _DECIMAL_MAX_DIGITS:
        return Decimal(text)
    return _parse_float(text)


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _sorted_object(pairs: list[tuple[str, object]]) -> dict:
    members = dict(pairs)  # a duplicate key keeps its last value, as MySQL 8 does
    return dict(sorted(members.items(), key=lambda item: key_sort_key(item[0])))


def parse_text(text: str | bytes) -> object:
    """Parse JSON text into the value MySQL would store for it.

    Object members come out in MySQL's key order (by key length, then UTF-8 bytes); a duplicate key keeps its
    last value (MySQL 8.0.3+). Integers in the 64-bit ranges are ints; other numbers are doubles, except where a
    double would change the number's text (``1.50``, very long integers): those stay ``Decimal`` so that a
    document rendered by :func:`to_text` parses back to the same text.
    """
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonTextSyntaxError(f"invalid UTF-8 ({exc.reason})", exc.start) from None
    try:
        value = json.loads(
            text,
            object_pairs_hook=_sorted_object,
            parse_float=_parse_float,
            parse_int=_parse_int,
            parse_constant=_reject_constant,
        )
    except json.JSONDecodeError as exc:
        raise JsonTextSyntaxError(exc.msg, exc.pos) from None
    except ValueError as exc:
        raise JsonTextSyntaxError(str(exc), 0) from None
    except RecursionError:
        raise JsonDepthError(f"JSON text exceeds the maximum depth of {JSON_DOCUMENT_MAX_DEPTH}") from None
    if text.count("[") + text.count("{") > JSON_DOCUMENT_MAX_DEPTH or "\\u" in text or "\\U" in text:
        _check_parsed(value, 0)
    return value


def _check_parsed(value: object, depth: int) -> None:
    """Depth limit and lone surrogates (invalid in UTF-8), which MySQL's parser rejects."""
    kind = type(value)
    if kind is dict or kind is list:
        if depth + 1 > JSON_DOCUMENT_MAX_DEPTH:
            raise JsonDepthError(f"JSON text exceeds the maximum depth of {JSON_DOCUMENT_MAX_DEPTH}")
        items = value.items() if kind is dict else enumerate(value)  # type: ignore[attr-defined]
        for key, item in items:
            if kind is dict:
                _check_string(key)
            _check_parsed(item, depth + 1)
    elif kind is str:
        _check_string(value)  # type: ignore[arg-type]


def _check_string(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JsonTextSyntaxError("invalid surrogate escape in string", exc.start) from None
