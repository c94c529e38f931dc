"""The operations overview of the quality history report, rendered by real Chromium from a lake loaded day by
day: plot data (read back from the rendered DOM) against the generator's model and the results table, and
the plots' colours present in a screenshot."""

from __future__ import annotations

import re
import struct
import zlib
from collections import Counter
from html import unescape
from pathlib import Path

import pytest

from tests.quality import browser

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def png_pixels(path: Path) -> Counter:
    """Colour -> pixel count of an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        size, kind = struct.unpack(">I4s", data[pos : pos + 8])
        chunk = data[pos + 8 : pos + 8 + size]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and ctype in (2, 6) and interlace == 0
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += size + 12
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours: Counter = Counter()
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        colours.update("#%02x%02x%02x" % tuple(line[i : i + 3]) for i in range(0, stride, bpp))
        prev = line
    return colours


def marks(dom: str, chart: str) -> list[dict]:
    """(series, x, value) of every bar or point of one chart in the rendered DOM."""
    svg = re.search(rf'<svg id="{chart}".*?</svg>', dom, re.S)
    assert svg, f"chart {chart} not rendered"
    return [
        {"series": unescape(s), "x": unescape(x), "value": float(v)}
        for s, x, v in re.findall(r'data-series="([^"]*)" data-x="([^"]*)" data-value="([^"]*)"', svg.group(0))
    ]


def test_overview_plots_render_with_the_loaded_data(loaded_lake, tmp_path: Path) -> None:
    from deltalake import DeltaTable

    from binlake.lake.metrics import utc
    from binlake.orchestration.dq_history import build_history
    from binlake.quality.report import PALETTE

    browser.chromium()
    lake = loaded_lake.lake
    history = build_history(str(lake), str(lake / "meta" / "dq_results"), str(tmp_path / "reports"))
    page = Path(history.index_path)
    dom = browser.dump_dom(page)

    # changes per day per table: the generator's row changes of each day
    expected = {
        (day, table): n
        for day, truth in zip(loaded_lake.days, loaded_lake.truth)
        for table in {t for t, _ in truth.changes}
        for n in [sum(v for (t, _), v in truth.changes.items() if t == table)]
    }
    got = {(m["x"], m["series"]): m["value"] for m in marks(dom, "changes")}
    assert got == {k: float(v) for k, v in expected.items()}

    # lag per source: one point per run, the run's end minus the day's last commit in the model
    metrics = sorted(
        (
            r
            for r in DeltaTable(str(lake / "meta" / "run_metrics")).to_pyarrow_table().to_pylist()
            if r["table_name"] == "*"
        ),
        key=lambda r: r["run_end"],
    )
    lag = marks(dom, "lag")
    assert [m["series"] for m in lag] == ["shop-primary"] * len(loaded_lake.days) == ["shop-primary"] * len(metrics)
    for m, r, truth in zip(lag, metrics, loaded_lake.truth):
        hours = (r["run_end"] - utc(truth.last_commit_us)).total_seconds() / 3600
        assert m["value"] == pytest.approx(hours, abs=0.006)  # in hours, whatever the lag

    # quarantine per run: nothing was quarantined
    assert [m["value"] for m in marks(dom, "quarantine")] == [0.0] * len(metrics)

    # pass rate: the validated run's share of passed expectations, from meta/dq_results itself
    results = DeltaTable(str(lake / "meta" / "dq_results")).to_pyarrow_table().to_pylist()
    [rate] = marks(dom, "pass_rate")
    assert rate["value"] == pytest.approx(100 * sum(r["success"] for r in results) / len(results), abs=0.01)

    # each recorded load has its page, linked from the overview
    for r in metrics:
        assert f"loads/{r['run_id']}.html" in dom
        text = browser.dump_dom(page.parent / "loads" / f"{r['run_id']}.html")
        assert "shop.orders" in text and r["run_id"] in text

    # and the plots show: every table's bar colour and the lag line's colour cover real pixels
    png = browser.screenshot(page, tmp_path / "overview.png")
    colours = png_pixels(png)
    for colour in PALETTE[:4]:
        assert colours[colour] > 300, (colour, colours.most_common(8))
