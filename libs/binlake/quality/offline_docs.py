"""Data Docs that render with no network: Great Expectations 1.24's page templates take Bootstrap, jQuery,
bootstrap-table, Font Awesome and Vega from CDNs (and GX's logo from a web bucket), so offline a page is an
unstyled, script-less list. :func:`make_offline` copies the bundled files (``static/vendor``, see its
LICENSES.md) into the site's ``static/vendor/`` and points every page's links at them, relative to the page.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

VENDOR = Path(__file__).with_name("static") / "vendor"

# the CDN address in GX's templates -> the file under static/vendor/
ASSETS: dict[str, str] = {
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css": "bootstrap-4.3.1/css/bootstrap.min.css",
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js": "bootstrap-4.3.1/js/bootstrap.min.js",
    "https://code.jquery.com/jquery-3.7.1.min.js": "jquery-3.7.1/jquery.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js": "popper.js-1.12.9/umd/popper.min.js",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css": "bootstrap-table-1.19.1/bootstrap-table.min.css",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js": "bootstrap-table-1.19.1/bootstrap-table.min.js",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/bootstrap-table-filter-control.min.js": "bootstrap-table-1.19.1/extensions/filter-control/bootstrap-table-filter-control.min.js",
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css": "bootstrap-table-1.19.0/extensions/filter-control/bootstrap-table-filter-control.css",
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.min.css": "bootstrap-table-1.19.0/extensions/filter-control/bootstrap-table-filter-control.min.css",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css": "bootstrap-datepicker-1.9.0/css/bootstrap-datepicker.min.css",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js": "bootstrap-datepicker-1.9.0/js/bootstrap-datepicker.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css": "fontawesome-free-6.6.0/css/all.min.css",
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css": "bootstrap-dark-1.1.0/css/bootstrap-prefers-dark.css",
    "https://cdn.jsdelivr.net/npm/vega@5": "vega-5.33.1/vega.min.js",
    "https://cdn.jsdelivr.net/npm/vega-lite@5": "vega-lite-5.23.0/vega-lite.min.js",
    "https://cdn.jsdelivr.net/npm/vega-embed@6": "vega-embed-6.29.0/vega-embed.min.js",
}
# GX's logo, asked of a web bucket with a query string; the site's own static/images has the same picture
_LOGO = re.compile(r"https://great-expectations-web-assets\.s3\.[^\"'\s]*/(logo-long\.png)(\?[^\"'\s]*)?")
_LINK = re.compile("|".join(re.escape(url) for url in sorted(ASSETS, key=len, reverse=True)))
_ANY_ASSET = re.compile(r"""(?:src|href)=["'](https?:)?//[^"']+\.(?:css|js)["']|src=["']https?://[^"']+["']""")


_TAG = re.compile(r"<(?:script|link)\b[^>]*>")
_SRI = re.compile(r"""\s(?:integrity|crossorigin)=(?:"[^"]*"|'[^']*')""")


def _local_tag(m: re.Match) -> str:
    """A tag of a bundled file without ``integrity``/``crossorigin``: a page opened from disk has an opaque
    origin, where a CORS-mode or integrity-checked request of a file is refused (the hashes hold: the files are
    the packages' own, see the tests)."""
    tag = m.group(0)
    return _SRI.sub("", tag) if "static/vendor/" in tag else tag


def make_offline(site: str) -> int:
    """Copy the bundled assets into ``<site>/static/vendor`` and rewrite the asset links of every page of the
    Data Docs site at ``site``; returns the number of pages changed. Rerunning changes nothing more."""
    root = Path(site)
    if not root.is_dir():
        return 0
    shutil.copytree(VENDOR, root / "static" / "vendor", dirs_exist_ok=True)
    changed = 0
    for page in root.rglob("*.html"):
        if (root / "static") in page.parents:
            continue
        text = page.read_text(encoding="utf-8")
        here = page.parent
        vendor = Path(os.path.relpath(root / "static" / "vendor", here)).as_posix()
        images = Path(os.path.relpath(root / "static" / "images", here)).as_posix()
        new = _LINK.sub(lambda m: f"{vendor}/{ASSETS[m.group(0)]}", text)
        new = _LOGO.sub(lambda m: f"{images}/{m.group(1)}", new)
        new = _TAG.sub(_local_tag, new)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    return changed


def remote_assets(page_html: str) -> list[str]:
    """The scripts, style sheets and images a page still loads from the network (what :func:`make_offline`
    leaves: none for the templates of the GX version pinned)."""
    return [m.group(0) for m in _ANY_ASSET.finditer(page_html)]
