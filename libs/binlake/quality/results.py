"""One row per expectation result: what ``meta.dq_results`` holds and what the reports read."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import astuple, dataclass, fields
from typing import Any, Iterable, Optional

from binlake.quality.rules import ERROR, WARNING

# (column, Spark SQL type, nullable): the schema of meta.dq_results
DQ_RESULTS_SCHEMA: tuple[tuple[str, str, bool], ...] = (
    ("run_id", "string", False),
    ("validated_at", "timestamp", False),
    ("suite", "string", False),  # also the data asset's name: silver.shop__orders, bronze.ops, ...
    ("expectation_id", "string", True),
    ("expectation_type", "string", False),
    ("columns", "string", True),  # comma-joined column names, NULL for table-level expectations
    ("kwargs", "string", False),  # the expectation's arguments as JSON
    ("level", "string", False),  # error | warning
    ("rule", "string", True),
    ("why", "string", True),
    ("success", "boolean", False),
    ("element_count", "bigint", True),
    ("unexpected_count", "bigint", True),
    ("unexpected_percent", "double", True),
    ("observed_value", "string", True),  # JSON
    ("unexpected_sample", "string", True),  # JSON list (at most 20 values)
    ("exception", "string", True),  # the error message when the expectation could not run
)


@dataclass(frozen=True, slots=True)
class ResultRow:
    run_id: str
    validated_at: dt.datetime
    suite: str
    expectation_id: Optional[str]
    expectation_type: str
    columns: Optional[str]
    kwargs: str
    level: str
    rule: Optional[str]
    why: Optional[str]
    success: bool
    element_count: Optional[int]
    unexpected_count: Optional[int]
    unexpected_percent: Optional[float]
    observed_value: Optional[str]
    unexpected_sample: Optional[str]
    exception: Optional[str]

    @property
    def is_error(self) -> bool:
        return self.level == ERROR

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ResultRow":
        return cls(**{f.name: d.get(f.name) for f in fields(cls)})

    def as_tuple(self) -> tuple:
        return astuple(self)


_SKIP_KWARGS = {"column", "column_list", "batch_id", "result_format"}


def _json(value: Any) -> Optional[str]:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def _exception(info: dict[str, Any]) -> Optional[str]:
    """The message of an expectation that raised (``exception_info`` is flat, or keyed by metric)."""
    infos = [info] if "raised_exception" in info else [v for v in info.values() if isinstance(v, dict)]
    msgs = [str(i.get("exception_message")) for i in infos if i.get("raised_exception")]
    return "; ".join(msgs) or None


def rows_of(run_id: str, validated_at: dt.datetime, suite: str, results: Iterable[Any]) -> list[ResultRow]:
    """``ResultRow``s of a GX suite validation's ``results`` (``ExpectationValidationResult``)."""
    out = []
    for r in results:
        cfg = r.expectation_config
        kwargs = dict(cfg.kwargs)
        cols = kwargs.get("column_list") or ([kwargs["column"]] if kwargs.get("column") else None)
        meta = cfg.meta or {}
        severity = getattr(cfg.severity, "value", cfg.severity) or "critical"
        res = r.result or {}
        exc = _exception(r.exception_info or {})
        out.append(
            ResultRow(
                run_id=run_id,
                validated_at=validated_at,
                suite=suite,
                expectation_id=cfg.id,
                expectation_type=cfg.type,
                columns=",".join(cols) if cols else None,
                kwargs=_json({k: v for k, v in kwargs.items() if k not in _SKIP_KWARGS}) or "{}",
                level=ERROR if severity == "critical" else WARNING,
                rule=meta.get("rule"),
                why=meta.get("why"),
                success=bool(r.success),
                element_count=res.get("element_count"),
                unexpected_count=res.get("unexpected_count"),
                unexpected_percent=res.get("unexpected_percent"),
                observed_value=_json(res.get("observed_value")),
                unexpected_sample=_json(res.get("partial_unexpected_list")),
                exception=exc,
            )
        )
    return out
