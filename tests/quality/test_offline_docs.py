"""The bundled Data Docs assets (``binlake.quality.offline_docs``): every CDN file GX's installed templates name is
bundled, the bundled files are the ones the templates' Subresource Integrity hashes name, and a page rewritten
by ``make_offline`` links only local files (fast: no Spark, no browser)."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from binlake.quality.offline_docs import ASSETS, VENDOR, make_offline, remote_assets

TEMPLATES = Path(__import__("great_expectations").__file__).parent / "render" / "view" / "templates"
ASSET_URL = re.compile(r"""(?:src|href)="(https://[^"]+)\"""")


def _template_assets() -> dict[str, str]:
    """URL -> its integrity attribute ('' without one), of the scripts and style sheets GX's templates load."""
    out: dict[str, str] = {}
    for template in TEMPLATES.rglob("*.j2"):
        for tag in re.findall(r"<(?:script|link)\b[^>]*>", template.read_text(encoding="utf-8")):
            url = ASSET_URL.search(tag)
            if url and ("<script" in tag or "stylesheet" in tag):
                sri = re.search(r'integrity="([^"]+)"', tag)
                out[url.group(1)] = sri.group(1) if sri else ""
    return out


def test_every_cdn_file_of_the_templates_is_bundled_and_present() -> None:
    wanted = _template_assets()
    assert len(wanted) >= 15
    assert sorted(set(wanted) - set(ASSETS)) == []
    for url, local in ASSETS.items():
        assert (VENDOR / local).is_file() and (VENDOR / local).stat().st_size > 100, url


def test_bundled_files_match_the_templates_integrity_hashes() -> None:
    checked = 0
    for url, sri in _template_assets().items():
        if not sri:
            continue
        algo, _, digest = sri.partition("-")
        data = (VENDOR / ASSETS[url]).read_bytes()
        assert base64.b64encode(hashlib.new(algo, data).digest()).decode() == digest, url
        checked += 1
    assert checked >= 2  # bootstrap.min.js and popper.min.js carry one


def test_make_offline_links_only_local_files(tmp_path: Path) -> None:
    page = tmp_path / "validations" / "a" / "b.html"
    page.parent.mkdir(parents=True)
    tags = "".join(f'<script src="{u}" integrity="sha384-x" crossorigin="anonymous"></script>' for u in ASSETS)
    logo = (
        '<img src="https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/logo-long.png?d=1&x=2">'
        '<a href="https://greatexpectations.io">GX</a>'
    )
    page.write_text(f"<html><head>{tags}</head><body>{logo}</body></html>", encoding="utf-8")
    assert make_offline(str(tmp_path)) == 1
    html = page.read_text(encoding="utf-8")
    assert remote_assets(html) == [] and "integrity" not in html and "crossorigin" not in html
    assert 'src="../../static/images/logo-long.png"' in html and 'href="https://greatexpectations.io"' in html
    for local in ASSETS.values():
        assert f'src="../../static/vendor/{local}"' in html
        assert (tmp_path / "static" / "vendor" / local).is_file()
    assert make_offline(str(tmp_path)) == 0  # rerunning changes nothing
