"""Fast checks of the MariaDB oracles themselves: the mariadb-binlog text parser and the per-type normalisation.

The inputs are lines as mariadb-binlog 10.11 prints them (``-vv --base64-output=decode-rows``, TZ=UTC), typed
here by hand; the expected values are the SQL literals the workload inserted.
"""

from __future__ import annotations

from tests.binlog.mariadb import normalize
from tests.binlog.mariadb.mariadb_binlog_text import ToolValue, parse
from tests.binlog.mariadb.workload import SET_BIG, T_INT, T_LOB, T_NUM, T_STR, T_TIME, Column

OUTPUT = b"""# at 4
#261122  1:50:38 server id 1  end_log_pos 256 CRC32 0xc7b3fda8 \tStart: binlog v 4, server v 10.11.19-MariaDB-log created 261122  1:50:38 at startup
# at 325
#261122  1:50:38 server id 7  end_log_pos 367 CRC32 0xd202280a \tGTID 0-7-11 trans
# at 7887
# at 8995
#261122  1:50:38 server id 7  end_log_pos 8995 CRC32 0xbb816db1 \tAnnotate_rows:
#Q> UPDATE lake.t_str SET vc_u = 'x' WHERE id = 3
#261122  1:50:38 server id 7  end_log_pos 9163 CRC32 0xdf418444 \tTable_map: `lake`.`t_str` mapped to number 22
# at 9163
#261122  1:50:38 server id 7  end_log_pos 9751 CRC32 0x69dede63 \tUpdate_rows: table id 22 flags: STMT_END_F
### UPDATE `lake`.`t_str`
### WHERE
###   @1=3 /* INT meta=0 nullable=0 is_null=0 */
###   @4='quote ' back\\slash \\x0a newline' /* VARSTRING(1200) meta=1200 nullable=1 is_null=0 */
### SET
###   @1=3 /* INT meta=0 nullable=0 is_null=0 */
###   @4=NULL /* VARSTRING(1200) meta=1200 nullable=1 is_null=1 */
### DELETE FROM `lake`.`t_str`
### WHERE
###   @1=4 /* INT meta=0 nullable=0 is_null=0 */
# Number of rows: 2
# at 9751
#261122  1:50:38 server id 7  end_log_pos 9782 CRC32 0x8cba2535 \tXid = 18
COMMIT/*!*/;
"""


def test_events_pair_positions_with_headers_even_after_annotate_rows() -> None:
    events, _ = parse(OUTPUT)
    assert [(e.pos, e.type_code, e.size) for e in events] == [
        (4, 15, 252),
        (325, 162, 42),
        (7887, 160, 1108),
        (8995, 19, 168),
        (9163, 24, 588),
        (9751, 16, 31),
    ]
    assert {e.server_id for e in events[1:]} == {7}
    assert events[0].timestamp == 1795312238  # date -u -d "2026-11-22 01:50:38" +%s


def test_rows_images_gtid_and_unescaped_strings() -> None:
    _, rows = parse(OUTPUT)
    assert [(r.pos, r.row, r.op, r.table, r.gtid) for r in rows] == [
        (9163, 0, "update", "t_str", "0-7-11"),
        (9163, 1, "update", "t_str", "0-7-11"),
    ]
    update = rows[0]
    assert update.before[4] == ToolValue(
        b"quote ' back\\slash \n newline", True, b"VARSTRING(1200) meta=1200 nullable=1 is_null=0"
    )
    assert update.after[4].token is None and update.after[1].token == b"3"


def _tool(col: Column, token: bytes, quoted: bool = False) -> object:
    return normalize.from_tool(col, ToolValue(token, quoted, b""))


def test_tool_quirks() -> None:
    assert _tool(T_INT.column("int_u"), b"-1 (4294967295)") == 4294967295
    assert _tool(T_INT.column("int_s"), b"-1 (4294967295)") == -1
    assert _tool(T_TIME.column("y"), b"1900") == 0
    assert _tool(T_TIME.column("dt"), b"2024:02:29", quoted=True) == "2024-02-29"
    assert _tool(T_TIME.column("ts2"), b"1709210096.12") == "2024-02-29 12:34:56.12"
    assert _tool(T_TIME.column("ts0"), b"0") == "0000-00-00 00:00:00"
    assert _tool(T_NUM.column("f"), b"1234.12") == normalize.float32(1234.125)
    assert _tool(T_NUM.column("f"), b"1234.12") != normalize.float32(1234.0)
    assert _tool(T_STR.column("bin8"), b"\x01\x02", quoted=True) == b"\x01\x02" + bytes(6)
    assert _tool(T_LOB.column("e"), b"3") == "ç"
    assert _tool(T_LOB.column("s"), b"b'00000101'") == "x,zé"
    # SET of 64 members: storage bytes printed in order (little-endian), each most significant bit first
    printed = b"b'1000000100000001000000001000000000000001000000000000000010000000'"
    assert _tool(T_LOB.column("s_big"), printed) == "s00,s07,s08,s31,s32,s63"
    assert T_LOB.column("s_big").members == SET_BIG


def test_binlake_contract_forms() -> None:
    assert normalize.from_binlake(T_STR.column("vbin"), {"hex": "C3a9"}) == b"\xc3\xa9"
    assert normalize.from_binlake(T_LOB.column("s"), "zé,x") == "x,zé"
    assert normalize.from_binlake(T_LOB.column("e"), 3, metadata="MINIMAL") == "ç"
    assert normalize.from_binlake(T_LOB.column("s_big"), 1 | 1 << 63, metadata="MINIMAL") == "s00,s63"
    for col, bad in (
        (T_INT.column("int_u"), "4294967295"),
        (T_STR.column("vbin"), "é"),
        (T_NUM.column("d5_2"), 1.05),
        (T_LOB.column("e"), 3),
    ):
        try:
            normalize.from_binlake(col, bad)
        except normalize.Mismatch:
            continue
        raise AssertionError(f"{col.name}: {bad!r} should not pass as a contract value")


def test_select_forms() -> None:
    assert normalize.from_select(T_NUM.column("f"), "-3.40282e38") == normalize.float32(-3.40282e38)
    assert normalize.from_select(T_STR.column("c_l"), "Ä  ") == "Ä"
    assert normalize.from_select(next(c for c in T_LOB.columns if c.name == "s"), "x,zé") == "x,zé"


def test_a_statement_over_several_rows_events_is_one_group() -> None:
    output = b"""# at 100
#261122  1:50:38 server id 1  end_log_pos 150 CRC32 0x00000001 \tTable_map: `lake`.`t_lob` mapped to number 26
# at 150
# at 900
#261122  1:50:38 server id 1  end_log_pos 900 CRC32 0x00000002 \tWrite_rows: table id 26
#261122  1:50:38 server id 1  end_log_pos 990 CRC32 0x00000003 \tWrite_rows: table id 26 flags: STMT_END_F
### INSERT INTO `lake`.`t_lob`
### SET
###   @1=1 /* INT meta=0 nullable=0 is_null=0 */
### INSERT INTO `lake`.`t_lob`
### SET
###   @1=2 /* INT meta=0 nullable=0 is_null=0 */
"""
    events, rows = parse(output)
    assert [(e.pos, e.size) for e in events] == [(100, 50), (150, 750), (900, 90)]
    assert [(r.pos, r.row, r.positions, r.after[1].token) for r in rows] == [
        (150, 0, (150, 900), b"1"),
        (150, 1, (150, 900), b"2"),
    ]
