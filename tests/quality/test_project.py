"""The committed GX project holds exactly what the suite factories build (ids are content-derived)."""

from __future__ import annotations

import json

import pytest

from tests.support import ROOT

pytestmark = pytest.mark.slow  # imports GX and runs the generator for the sample SDI


def test_committed_suites_match_the_factories(tmp_path):
    from binlake.quality.project import sample_tables, write_project

    names = write_project(tmp_path, sample_tables())
    committed = ROOT / "expectations" / "gx" / "expectations"
    written = tmp_path / "gx" / "expectations"
    files = sorted(p.relative_to(written) for p in written.rglob("*.json"))
    assert files == sorted(p.relative_to(committed) for p in committed.rglob("*.json")), (
        "run: .venv/bin/python -m binlake.quality.project"
    )
    assert len(files) == len(names) == 11
    for rel in files:
        assert json.loads((written / rel).read_text()) == json.loads((committed / rel).read_text()), rel
    config = (ROOT / "expectations" / "gx" / "great_expectations.yml").read_text()
    assert config.startswith("analytics_enabled: false")
    assert "uncommitted/" in (ROOT / "expectations" / "gx" / ".gitignore").read_text()


def test_a_suite_file_reads_back_as_its_rules():
    import great_expectations as gx

    context = gx.get_context(mode="file", project_root_dir=str(ROOT / "expectations"))
    suite = context.suites.get("silver.shop__orders")
    by_type = {(e.expectation_type, getattr(e, "column", None)) for e in suite.expectations}
    assert ("expect_column_values_to_be_in_set", "status") in by_type
    assert ("expect_column_values_to_be_json_parseable", "doc") in by_type
    assert ("expect_column_values_to_be_unique", "order_id") in by_type
