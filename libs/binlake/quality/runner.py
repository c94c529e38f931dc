"""Run every suite on the lake's Spark DataFrames, store the results, build Data Docs and the run's summary.

    summary = validate_lake(spark, lake, run_id)   # raises QualityCheckFailed / NotValidated (see validate_lake)

One GX context per run (analytics off), with its stores under ``<lake>/reports/quality/gx`` and a Data Docs
site ``binlake_docs`` at ``<lake>/reports/quality/data_docs``, so Data Docs list every run's validations. Each
suite is checked against one DataFrame passed as the batch parameter of a whole-DataFrame batch definition;
nothing is read while suites are built. Every name handed to GX is made safe first (:mod:`binlake.quality.names`):
a silver table's suite is named by its folder, and each checked frame's columns are renamed by ``gx_name``.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Optional

from binlake.lake.layout import NAME_FILE, LakeLayout
from binlake.quality import frames
from binlake.quality import suites as S
from binlake.quality.errors import LakeLayoutError, NotValidated, QualityCheckFailed, ValidationFailed
from binlake.quality.names import gx_name
from binlake.quality.results import DQ_RESULTS_SCHEMA, ResultRow, rows_of
from binlake.sdi.errors import SdiError
from binlake.sdi.model import Table, parse_sdi

if TYPE_CHECKING:
    from great_expectations import ExpectationSuite
    from pyspark.sql import DataFrame, SparkSession

Fact = tuple[str, list[dict[str, Any]]]  # (title, rows): figures the summary report shows as tables
DOCS_SITE = "binlake_docs"  # not "local_site": GX's ephemeral context already has one by that name
DATASOURCE = "binlake_lake"


@dataclass(frozen=True, slots=True)
class ValidationOptions:
    """``max_quarantine_share``: quarantined / bronze changes of a run allowed before the run fails.
    ``suites``: validate only these suite names (None: all). ``report_dir``: default ``<lake>/reports/quality``.
    ``raise_on_error``: raise :class:`NotValidated` when something could not be validated, else
    :class:`QualityCheckFailed` when an error-level expectation failed."""

    max_quarantine_share: float = 0.0
    suites: Optional[frozenset[str]] = None
    report_dir: Optional[str] = None
    engine: str = "auto"
    raise_on_error: bool = True
    write_results: bool = True


@dataclass(frozen=True)
class ValidationSummary:
    run_id: str
    validated_at: dt.datetime
    lake: str
    results: tuple[ResultRow, ...]
    report_path: str
    data_docs_path: str
    skipped: tuple[str, ...] = field(default=())  # suites (silver tables) that could not be built, and why
    facts: tuple[Fact, ...] = field(default=())

    @property
    def failed_errors(self) -> list[ResultRow]:
        """Error-level expectations that ran and failed."""
        return [r for r in self.results if not r.success and r.is_error and r.exception is None]

    @property
    def failed_warnings(self) -> list[ResultRow]:
        return [r for r in self.results if not r.success and not r.is_error]

    @property
    def not_validated(self) -> list[str]:
        """What could not be validated: suites that could not be built and error-level expectations that raised
        instead of giving a result; each ``<suite>: <why>``."""
        return list(self.skipped) + [
            f"{r.suite}: {r.expectation_type}({r.columns or ''}) could not run: {r.exception}"
            for r in self.results
            if r.is_error and r.exception
        ]

    @property
    def success(self) -> bool:
        return self.failure() is None

    def headline(self) -> str:
        """One line: ``PASSED`` or ``FAILED`` with the counts (expectations, tables, what could not be validated)."""
        passed = sum(1 for r in self.results if r.success)
        tables = len({r.suite for r in self.results} - set(S.PIPELINE_SUITES))
        pipeline = len({r.suite for r in self.results} & set(S.PIPELINE_SUITES))
        text = (
            f"{'PASSED' if self.success else 'FAILED'}: {passed} of {len(self.results)} expectations passed "
            f"({len(self.failed_errors)} error-level and {len(self.failed_warnings)} warning-level failed) on "
            f"{tables} silver table(s) and {pipeline} pipeline suite(s)"
        )
        failed = self.failed_errors + self.failed_warnings
        if failed:
            named = [f"{r.suite} {r.rule or r.expectation_type}({r.columns or ''})" for r in failed[:3]]
            text += "; failed: " + ", ".join(named) + (f" and {len(failed) - 3} more" if len(failed) > 3 else "")
        if self.not_validated:
            text += f"; {len(self.not_validated)} check(s) could not be validated"
        return text

    def failure(self) -> Optional[ValidationFailed]:
        """What the validation fails with: :class:`NotValidated` (exit 2) when something could not be validated,
        whatever else failed; else :class:`QualityCheckFailed` (exit 1) when an error-level expectation failed;
        None when it passed."""
        if self.not_validated:
            return NotValidated(self)
        if self.failed_errors:
            return QualityCheckFailed(self)
        return None


@dataclass(frozen=True, slots=True)
class Check:
    """One suite and the DataFrame it validates (the asset of the same name)."""

    suite: "ExpectationSuite"
    frame: "DataFrame"


def default_run_id(now: dt.datetime) -> str:
    return "adhoc-" + now.strftime("%Y%m%dT%H%M%SZ")


def registry_tables(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str], Table]:
    """The newest definition of each table in ``meta.schema_registry`` rows."""
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        key = (r["db"], r["table_name"])
        if key not in newest or r["version"] > newest[key]["version"]:
            newest[key] = r
    out = {}
    for key, r in newest.items():
        try:
            table = parse_sdi(r["sdi_json"], r.get("origin") or "").table
        except SdiError:
            continue  # the registry suite reports it (sdi_parses); the table goes unchecked
        if table is not None:
            out[key] = table
    return out


def _read(engine: Any, spark: "SparkSession", path: str) -> Optional["DataFrame"]:
    return engine.scan(spark, path) if engine.exists(path) else None


def build_checks(
    spark: "SparkSession", layout: LakeLayout, run_id: str, options: ValidationOptions, engine: Any, adhoc: bool = False
) -> tuple[list[Check], list[str], list[Fact]]:
    """Every (suite, DataFrame) of the lake, what could not be checked (every silver table is checked or named
    there), and figures for the report. With ``options.suites`` only those suites are built (a name the lake
    has no suite of is an error, not an empty pass). The run's bronze and quarantine rows are those filed under
    ``run_id`` (none for a run that ingested nothing); only an ``adhoc`` validation (no run named) takes all."""
    from pyspark.sql import functions as F

    checks: list[Check] = []
    skipped: list[str] = []
    facts: list[Fact] = []
    named: set[str] = set()  # every suite of the lake, wanted or not

    def wanted(*suites: str) -> bool:
        named.update(suites)
        return options.suites is None or not options.suites.isdisjoint(suites)

    def skip(suites: tuple[str, ...], why: str) -> None:
        if wanted(*suites):
            skipped.append(f"{', '.join(s for s in suites if options.suites is None or s in options.suites)}: {why}")

    bronze = _read(engine, spark, layout.bronze)
    registry_df = _read(engine, spark, layout.meta("schema_registry"))
    registry_rows = [r.asDict() for r in registry_df.collect()] if registry_df is not None else []
    definitions = registry_tables(registry_rows)
    silver = {pair: engine.scan(spark, layout.silver(*pair)) for pair in layout.silver_tables()}
    for (db, table), frame in silver.items():
        if not wanted(S.silver_table_name(db, table)):
            continue
        definition = definitions.get((db, table))
        if definition is None:
            skip(
                (S.silver_table_name(db, table),),
                "no usable definition in meta.schema_registry (none, or its "
                "SDI does not parse): snapshot the table's SDI (binlake run --sdi PATH) and validate again",
            )
            continue
        checks.append(Check(S.table_suite(definition), frames.live_rows(frame)))
    for folder in layout.unnamed_silver_folders():
        skip(
            (f"silver.{folder}",),
            f"silver/{folder} is a Delta table whose database and table binlake can not "
            f"tell (a cut folder name without a readable {NAME_FILE}): restore that file or move the folder away",
        )
    pipeline = (S.BRONZE_ORDER, S.BRONZE_SEQUENCE, S.BRONZE_OPS, S.RECONCILIATION, S.QUARANTINE, S.TEMPORALS)
    if bronze is None:
        skip(pipeline, f"no bronze Delta table at {layout.bronze}")
    elif wanted(*pipeline):
        bronze_run = frames.run_rows(bronze, run_id)
        in_run = not adhoc
        if adhoc:  # an ad-hoc validation: "the run" is everything in the lake
            bronze_run = bronze
        changes = bronze_run.where(F.col("op").isin(*frames.CHANGE_OPS)).count()
        checks += [
            Check(S.bronze_order_suite(), frames.bronze_changes(bronze)),
            Check(S.bronze_sequence_suite(), frames.row_sequence(bronze)),
            Check(S.bronze_ops_suite(), bronze_run.select("op")),
        ]
        checkpoints = _read(engine, spark, layout.meta("checkpoints"))
        recon = frames.reconciliation(
            spark,
            frames.applied(bronze, checkpoints),
            frames.live_counts(silver),
        )
        checks.append(Check(S.reconciliation_suite(), recon))
        nulled = frames.invalid_temporals(spark, checkpoints, run_id)
        checks.append(Check(S.temporals_suite(), nulled))
        facts.append(
            (
                "Zero or invalid dates stored as NULL (per table and column; raw text in bronze)",
                [r.asDict() for r in nulled.collect()],
            )
        )
        facts.append(
            (
                "Bronze rows of the run by operation",
                [r.asDict() for r in frames.op_counts(bronze_run).orderBy("op").collect()],
            )
        )
        facts.append(
            ("Reconciliation: silver live rows vs bronze inserts - deletes", [r.asDict() for r in recon.collect()])
        )
        quarantine = _read(engine, spark, layout.meta("quarantine"))
        quarantined = (
            0 if quarantine is None else (frames.run_rows(quarantine, run_id) if in_run else quarantine).count()
        )
        checks.append(
            Check(
                S.quarantine_suite(options.max_quarantine_share),
                frames.quarantine_share(spark, run_id, changes, quarantined),
            )
        )
    if registry_df is None:
        skip((S.REGISTRY,), f"no Delta table at {layout.meta('schema_registry')}")
    elif wanted(S.REGISTRY):
        checks.append(Check(S.registry_suite(), frames.registry_completeness(spark, registry_rows)))
    if options.suites is not None:
        unknown = sorted(options.suites - named)
        if unknown:
            raise LakeLayoutError(
                f"--suite {', '.join(unknown)}: no such suite in the lake at {layout.root}; its "
                f"suites are {', '.join(sorted(named))}"
            )
        checks = [c for c in checks if c.suite.name in options.suites]
    return checks, skipped, facts


def gx_context(report_dir: str) -> Any:
    """A GX context for one run: analytics off, stores and the Data Docs site under ``report_dir``."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        FilesystemStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        store_backend_defaults=FilesystemStoreBackendDefaults(root_directory=os.path.join(report_dir, "gx")),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
        data_docs_sites={
            DOCS_SITE: {
                "class_name": "SiteBuilder",
                "store_backend": {
                    "class_name": "TupleFilesystemStoreBackend",
                    "base_directory": os.path.join(report_dir, "data_docs"),
                },
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            }
        },
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def run_checks(context: Any, checks: list[Check], run_id: str, validated_at: dt.datetime) -> list[ResultRow]:
    """Validate each check's DataFrame against its suite; one :class:`ResultRow` per expectation result.

    On Spark every sampled expectation costs a job of its own, so the stored run (what Data Docs show) counts
    unexpected values without sampling them; only the expectations that failed are run again, unstored, to
    sample up to :data:`SAMPLE_SIZE` of their unexpected values for the report and ``meta.dq_results``."""
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier

    source = context.data_sources.add_or_update_spark(DATASOURCE)
    run = RunIdentifier(run_name=gx_name(run_id), run_time=validated_at.replace(tzinfo=dt.timezone.utc))
    rows: list[ResultRow] = []
    for check in checks:
        name = check.suite.name
        asset = source.add_dataframe_asset(name)
        batch = asset.add_batch_definition_whole_dataframe("whole")
        suite = context.suites.add_or_update(check.suite)
        definition = context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=name, data=batch, suite=suite)
        )
        frame = check.frame.toDF(*(gx_name(c) for c in check.frame.columns)).cache()
        try:
            params = {"dataframe": frame}
            result = definition.run(batch_parameters=params, run_id=run, result_format=result_format(0))
            results = list(result.results)
            failed = [
                r.expectation_config for r in results if not r.success and not r.exception_info.get("raised_exception")
            ]
            if failed:
                samples = _samples(batch, params, name, failed)
                for r in results:
                    sample = samples.get(_config_key(r.expectation_config))
                    if sample is not None:
                        r.result["partial_unexpected_list"] = sample
        finally:
            frame.unpersist()
        rows += rows_of(run_id, validated_at, name, results)
    return rows


SAMPLE_SIZE = 20


def result_format(sample: int) -> dict[str, Any]:
    """GX's result format for a run: counts and up to ``sample`` unexpected values, and no "unexpected index
    query". GX renders that query by analysing ``df.filter(condition)``; a uniqueness condition is a window
    function (count over a partition), which a filter may not hold, so on Spark the analysis fails, GX swallows
    the error and Spark's observation listener logs the AnalysisException's stack trace, once per unique key."""
    return {"result_format": "SUMMARY", "partial_unexpected_count": sample, "return_unexpected_index_query": False}


def _config_key(config: Any) -> tuple[str, str]:
    return config.type, repr(sorted(config.kwargs.items()))


def _samples(batch: Any, params: dict[str, Any], name: str, configs: list[Any]) -> dict[tuple[str, str], list]:
    """Sampled unexpected values of the expectations ``configs`` (a run that is not stored)."""
    import great_expectations as gx
    from great_expectations.validator.v1_validator import Validator

    suite = gx.ExpectationSuite(name=f"{name}.samples", expectations=[copy.copy(c.to_domain_obj()) for c in configs])
    validator = Validator(batch_definition=batch, batch_parameters=params, result_format=result_format(SAMPLE_SIZE))
    result = validator.validate_expectation_suite(suite)
    return {_config_key(r.expectation_config): r.result.get("partial_unexpected_list") or [] for r in result.results}


def _results_frame(spark: "SparkSession", rows: list[ResultRow]) -> "DataFrame":
    schema = ", ".join(f"`{c}` {t}" for c, t, _ in DQ_RESULTS_SCHEMA)
    return spark.createDataFrame([r.as_tuple() for r in rows], schema)


def history(spark: "SparkSession", engine: Any, layout: LakeLayout) -> list[ResultRow]:
    """The result rows in ``meta.dq_results`` of each run's latest validation (a run validated again, e.g. a
    rerun day, supersedes its earlier validation)."""
    df = _read(engine, spark, layout.meta("dq_results"))
    rows = [] if df is None else [ResultRow.from_dict(r.asDict()) for r in df.collect()]
    latest: dict[str, dt.datetime] = {}
    for r in rows:
        if r.run_id not in latest or r.validated_at > latest[r.run_id]:
            latest[r.run_id] = r.validated_at
    return [r for r in rows if r.validated_at == latest[r.run_id]]


def validate_lake(
    spark: "SparkSession", lake: str, run_id: Optional[str] = None, options: ValidationOptions = ValidationOptions()
) -> ValidationSummary:
    """Validate the lake at ``lake`` as of run ``run_id`` (default ``adhoc-<UTC time>``): every suite, results
    appended to ``meta.dq_results``, Data Docs rebuilt, ``runs/<run_id>/summary.html`` written.

    With ``options.raise_on_error``, raises :class:`NotValidated` (exit code 2) when a suite or a silver table
    could not be validated (whatever else failed), else :class:`QualityCheckFailed` (exit code 1) when an
    error-level expectation failed; warning-level failures are only reported."""
    from binlake.lake.delta import engine_for
    from binlake.quality.offline_docs import make_offline
    from binlake.quality.report import write_summary

    if not os.path.isdir(lake):
        raise LakeLayoutError(
            f"{lake}: no such lake directory; pass the --lake root that holds bronze/, silver/ and meta/"
        )
    layout = LakeLayout(os.path.abspath(lake))
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
    report_dir = options.report_dir or layout.reports
    engine = engine_for(spark, options.engine)

    context = gx_context(report_dir)  # first: GX builds suites only with an active context
    adhoc = run_id is None
    run_id = run_id or default_run_id(now)
    checks, skipped, facts = build_checks(spark, layout, run_id, options, engine, adhoc)
    rows = run_checks(context, checks, run_id, now)
    context.build_data_docs(site_names=[DOCS_SITE])
    make_offline(os.path.join(report_dir, "data_docs"))  # CDN links -> the bundled copies
    earlier = [r for r in history(spark, engine, layout) if r.run_id != run_id]
    if options.write_results and rows:
        engine.append(layout.meta("dq_results"), _results_frame(spark, rows))
    docs = os.path.join(report_dir, "data_docs", "index.html")
    summary = ValidationSummary(
        run_id,
        now,
        layout.root,
        tuple(rows),
        os.path.join(report_dir, "runs", run_id, "summary.html"),
        docs,
        tuple(skipped),
        tuple(facts),
    )
    write_summary(summary, earlier)
    failure = summary.failure()
    if options.raise_on_error and failure is not None:
        raise failure
    return summary
