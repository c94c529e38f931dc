"""Every real .ibd fixture yields exactly the SDI records extracted from it (../shared/fixtures/sdi)."""

from __future__ import annotations

import json

import pytest

from binlake.sdi import read_entries, read_ibd_sdi
from binlake.sdi.ibd import sdi_offset
from tests.support import FIXTURES, fixture_path

IBD_NAMES = [
    "8.0_sakila_actor",
    "8.0_sakila_address",
    "8.0_sakila_film",
    "8.0_sakila_film_text",
    "8.0_sakila_fts_0000000000000451_config",
    "8.0_sakila_staff",
    "8.0_sys_sys_config",
    "8.4_sakila_actor",
    "8.4_sakila_address",
    "8.4_sakila_film",
]


def _manifest(name: str) -> dict:
    entries = json.loads(fixture_path("manifest.json").read_text())
    return next(e for e in entries if e["file"] == f"sdi/ibd/innodb_ruby/{name}.ibd")


def test_fixture_folder_holds_exactly_the_tablespaces_listed_here():
    folder = fixture_path("sdi", "ibd", "innodb_ruby")
    assert sorted(p.stem for p in folder.glob("*.ibd")) == sorted(IBD_NAMES)


@pytest.mark.parametrize("name", IBD_NAMES)
def test_ibd_yields_exactly_the_extracted_records(name):
    path = fixture_path("sdi", "ibd", "innodb_ruby", f"{name}.ibd")
    expected = {
        p.name: p.read_bytes() for p in fixture_path("sdi", "extracted").glob(f"innodb_ruby__{name}.type*.json")
    }
    assert expected, "no extracted records for this tablespace"
    info, records = read_ibd_sdi(path.read_bytes(), str(path))
    got = {f"innodb_ruby__{name}.type{r.sdi_type}.id{r.sdi_id}.json": r.data for r in records}
    assert got == expected  # same keys, byte-for-byte the same stored JSON
    assert [r.sdi_type for r in records] == [1, 2]  # SDI index order: (type, id)

    manifest = _manifest(name)
    assert [(r.sdi_type, r.sdi_id, r.uncompressed_len, r.compressed_len, r.external) for r in records] == [
        (m["type"], m["id"], m["uncompressed_len"], m["compressed_len"], m["external_blob"]) for m in manifest["sdi"]
    ]
    assert info.page_size == 16384
    assert info.n_pages * 16384 == manifest["size"]
    assert info.server_version == manifest["sdi"][0]["mysqld_version_id"]
    assert info.sdi_root == 3


def test_the_file_reader_gives_the_same_entries_as_the_stored_strings():
    path = fixture_path("sdi", "ibd", "innodb_ruby", "8.0_sakila_staff.ibd")
    entries = read_entries(path)
    assert [(e.sdi_type, e.sdi_id) for e in entries] == [(1, 389), (2, 32)]
    stored = FIXTURES / "sdi" / "extracted" / "innodb_ruby__8.0_sakila_staff.type1.id389.json"
    assert entries[0].text.encode() == stored.read_bytes()
    doc = entries[0].document()
    assert doc.header.dd_object_type == "Table" and doc.table.name == "staff"
    assert entries[1].document().obj.name == "sakila/staff"


def test_sdi_offset_for_each_page_size():
    # fsp_header_get_sdi_offset: XDES_ARR_OFFSET (150) + XDES_SIZE * xdes_arr_size + INFO_MAX_SIZE (115)
    assert sdi_offset(16384) == 150 + 40 * 256 + 115
    assert sdi_offset(4096) == 150 + 88 * 16 + 115
    assert sdi_offset(8192) == 150 + 56 * 64 + 115
    assert sdi_offset(32768) == 150 + 40 * 512 + 115
    assert sdi_offset(65536) == 150 + 40 * 1024 + 115
