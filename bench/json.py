"""MySQL JSON throughput: decode, render, encode and apply_json_diffs on documents from 100 B to 1 MB.

    python bench/json.py                 # sizes 100 B, 1 KB, 10 KB, 100 KB, 1 MB
    python bench/json.py --sizes 1000 1000000 --diffs 32 --seconds 1

Documents are generated deterministically (an order-like object: items with ids, names, prices, tags, nested
attributes) and stored as MySQL binary JSON. Each size gets one diff vector of ``--diffs`` valid diffs (REPLACE,
INSERT into objects and arrays, REMOVE) spread over the document. Reported per size:

- decode: binary cell -> Python value (documents/s and MB/s); text: value -> MySQL text; encode: value -> binary;
- apply: apply_json_diffs on the decoded value (vectors/s, diffs/s);
- growth: (apply time / smallest size's apply time) / (size / smallest size). At most ~1 means apply costs no
  more than linear in the document (copy-on-write copies only the containers on the diffs' paths).
- pymysqlrepl: python-mysql-replication's ``json_binary.parse_json`` on the same bytes, for reference (it copies
  the remaining buffer at every value, so it grows quadratically; skipped above 100 KB unless --compare-all).
"""

from __future__ import annotations

import os
import sys

# Run as a script, this file's folder comes first on sys.path and "json.py" would shadow the standard library.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != _HERE]

import argparse
import random
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from binlake.mysqljson import (
    ApplyStatus,
    DiffOp,
    JsonDiff,
    apply_json_diffs,
    decode,
    encode,
    parse_path,
    to_text,
)

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def make_item(rng: random.Random, index: int) -> dict:
    return {
        "id": index,
        "sku": f"SKU-{rng.randrange(10**8):08d}",
        "name": " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 4))),
        "price": round(rng.uniform(1, 500), 2),
        "qty": rng.randrange(1, 20),
        "tags": [rng.choice(WORDS) for _ in range(rng.randrange(1, 4))],
        "attrs": {"color": rng.choice(WORDS), "weight": rng.randrange(100, 5000), "fragile": rng.random() < 0.2},
    }


def make_document(size: int, seed: int = 7) -> dict:
    """An order-like object whose binary form is about ``size`` bytes (tiny items below 400 bytes)."""
    rng = random.Random(seed)
    document: dict = {"order": seed, "items": []}
    while len(encode(document)) < size:
        step = max(1, (size - len(encode(document))) // 170)
        for _ in range(step):
            index = len(document["items"])
            document["items"].append(make_item(rng, index) if size >= 400 else {"id": index, "qty": 1})
    return document


def make_diffs(document: dict, count: int, seed: int = 11) -> list[JsonDiff]:
    """``count`` valid diffs spread over the items; the array insert comes last so earlier indexes stay valid."""
    rng = random.Random(seed)
    items = len(document["items"])
    diffs: list[JsonDiff] = []
    inserted: list[str] = []
    for n in range(count - 1):
        k = rng.randrange(items)
        kind = n % 4
        if kind == 0:
            diffs.append(JsonDiff(DiffOp.REPLACE, parse_path(f"$.items[{k}].id"), round(rng.uniform(1, 9), 2)))
        elif kind == 1:
            inserted.append(f"$.items[{k}].note{n}")
            diffs.append(JsonDiff(DiffOp.INSERT, parse_path(inserted[-1]), "checked"))
        elif kind == 2:
            diffs.append(JsonDiff(DiffOp.REPLACE, parse_path(f"$.items[{k}].qty"), n))
        else:
            diffs.append(JsonDiff(DiffOp.REMOVE, parse_path(inserted.pop())))
    diffs.append(JsonDiff(DiffOp.INSERT, parse_path("$.items[0]"), {"id": -1, "name": "inserted"}))
    return diffs


def rate(function: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``function``, timed for at least ``seconds``."""
    calls, start = 0, time.perf_counter()
    while True:
        function()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--diffs", type=int, default=16, help="diffs per vector (default 16)")
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum time per measurement")
    parser.add_argument("--compare-all", action="store_true", help="time python-mysql-replication at every size")
    args = parser.parse_args(argv)

    try:
        from pymysqlreplication.json_binary import parse_json as pmr_parse_json
    except ImportError:
        pmr_parse_json = None

    header = (
        f"{'size':>9} {'bytes':>9} {'decode doc/s':>13} {'decode MB/s':>12} {'text MB/s':>10} "
        f"{'encode MB/s':>12} {'apply vec/s':>12} {'diffs/s':>10} {'growth':>7} {'pymysqlrepl doc/s':>18}"
    )
    print(header)
    print("-" * len(header))
    base: tuple[int, float] | None = None
    for size in sorted(args.sizes):
        document = make_document(size)
        raw = encode(document)
        value = decode(raw)
        diffs = make_diffs(value, args.diffs)
        result = apply_json_diffs(value, diffs)
        if result.status != ApplyStatus.SUCCESS:
            raise SystemExit(f"benchmark diffs did not apply: {result.reason}")
        megabytes = len(raw) / 1e6
        decode_rate = rate(lambda: decode(raw), args.seconds)
        text_rate = rate(lambda: to_text(value), args.seconds)
        encode_rate = rate(lambda: encode(value), args.seconds)
        apply_rate = rate(lambda: apply_json_diffs(value, diffs), args.seconds)
        apply_seconds = 1 / apply_rate
        if base is None:
            base = (len(raw), apply_seconds)
        growth = (apply_seconds / base[1]) / (len(raw) / base[0])
        pmr = "-"
        if pmr_parse_json is not None and (len(raw) <= 150_000 or args.compare_all):
            payload = raw[1:]
            pmr = f"{rate(lambda: pmr_parse_json(raw[0], payload), args.seconds):,.0f}"
        print(
            f"{size:>9,} {len(raw):>9,} {decode_rate:>13,.0f} {decode_rate * megabytes:>12.1f} "
            f"{text_rate * megabytes:>10.1f} {encode_rate * megabytes:>12.1f} {apply_rate:>12,.0f} "
            f"{apply_rate * len(diffs):>10,.0f} {growth:>7.3f} {pmr:>18}"
        )
    print("\ngrowth = (apply time / first size's) / (bytes / first size's); <= 1 means no worse than linear.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
