"""Binary JSON the server's own decoder accepts though binlake's checks were stricter (issue #16)."""

from __future__ import annotations

from decimal import Decimal

from binlake.mysqljson import decode, decode_text


def _opaque_decimal(precision: int, scale: int, int_digits: str, frac_digits: str) -> bytes:
    """A JSON document holding one DECIMAL opaque (type 0x0F, MYSQL_TYPE_NEWDECIMAL, length, then
    ``Json_decimal::get_binary``: precision, scale, ``decimal2bin`` groups of 9 digits, the sign bit flipped)."""
    dig2bytes = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4]
    out = bytearray()
    lead = len(int_digits) % 9
    groups = ([int_digits[:lead]] if lead else []) + [int_digits[i : i + 9] for i in range(lead, len(int_digits), 9)]
    groups += [frac_digits[i : i + 9] for i in range(0, len(frac_digits), 9)]
    for g in groups:
        out += int(g).to_bytes(4 if len(g) == 9 else dig2bytes[len(g)], "big")
    out[0] ^= 0x80
    data = bytes((precision, scale)) + bytes(out)
    return b"\x0f\xf6" + bytes([len(data)]) + data


def test_decimal_opaque_with_precision_above_65_is_read_by_its_layout() -> None:
    digits = "1234567890" * 7  # 70 integer digits
    doc = _opaque_decimal(72, 2, digits, "25")
    assert decode(doc) == Decimal(digits + ".25")
    assert decode_text(doc) == digits + ".25"
