"""``generate``: run the workload model, write its binlogs, SDI and ground truth under one directory.

Layout::

    DIR/landing/<source>/mysql-bin.000001 ...  binlogs (rotated at max size and at the end of each day)
    DIR/landing/<source>/mysql-bin.index
    DIR/sdi/<db>/<table>/v<N>/<table>_<id>.sdi  SDI of each table version (and <table>.ibd2sdi.json)
    DIR/truth/<db>.<table>/day=<date>.jsonl     each table's rows at the end of each day (every name seen so
                                                far; empty once no table holds it; see Workload.truth)
    DIR/manifest.json                           config, files per day (with each table's columns at its end
                                                and, with DDL, the row changes of blocked tables so far),
                                                table versions and DDL statements with their positions
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gc
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from binlake.binlog.writer import BinlogWriter
from binlake.generate.config import GenerateConfig
from binlake.generate.emit import Emitter
from binlake.generate.sdi_out import write_table_sdi
from binlake.generate.truth import TruthWriter
from binlake.generate.workload import Workload

SERVER_UUID = "6f1e2b3c-4d5e-11ef-8a9b-0242ac120002"


@dataclass
class GenerateResult:
    out: Path
    binlogs: list[Path] = field(default_factory=list)
    binlog_bytes: int = 0
    transactions: int = 0
    row_changes: int = 0
    seconds: float = 0.0
    events: dict[str, int] = field(default_factory=dict)

    @property
    def mb_per_second(self) -> float:
        return self.binlog_bytes / 1e6 / self.seconds if self.seconds else 0.0


def _utc(us: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(us / 1_000_000, dt.timezone.utc).replace(tzinfo=None)


def generate(out: str | Path, config: GenerateConfig) -> GenerateResult:
    """Run the workload and write everything under ``out`` (see the module docstring).

    Python's cyclic garbage collector is paused while generating: the model's data has no reference cycles
    (reference counting frees it), and scanning its large heap over and over cost a third of the time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _generate(Path(out), config)
    finally:
        if enabled:
            gc.enable()


def _generate(out: Path, config: GenerateConfig) -> GenerateResult:
    started = time.perf_counter()
    landing = out / "landing" / config.source
    if landing.exists() and any(landing.iterdir()):
        from binlake.errors import BinlakeError

        raise BinlakeError(f"{landing} is not empty; generate into a new --out directory")
    workload = Workload(config)
    emitter = Emitter(config.row_image, partial_json=config.partial_share > 0)
    day0 = int(dt.datetime.combine(config.start_date, dt.time(), dt.timezone.utc).timestamp())
    writer = BinlogWriter(
        landing, server_id=config.server_id, server_uuid=SERVER_UUID, max_size=config.rotate_size, create_timestamp=day0
    )
    result = GenerateResult(out)
    manifest: dict = {
        "config": _config_json(config),
        "source": config.source,
        "days": [],
        "table_versions": [],
        "ddl": [],
    }
    created: dict[str, dt.datetime] = {}
    truth_writer = TruthWriter(out / "truth")
    for day, date, transactions in workload.days():
        first_file = writer.current_file.name
        last_us = 0
        for txn in transactions:
            events = emitter.events(txn)
            where = writer.write_transaction(
                events, gno=txn.gno, commit_time_us=txn.commit_time_us, compress=txn.compressed and txn.ddl is None
            )
            result.transactions += 1
            result.row_changes += sum(len(s.changes) for s in txn.statements)
            last_us = txn.commit_time_us
            if txn.ddl is not None:
                when = _utc(txn.commit_time_us)
                manifest["ddl"].append(
                    {
                        "gno": txn.gno,
                        "db": txn.ddl_db,
                        "statement": txn.ddl,
                        "binlog_file": where.file,
                        "binlog_pos": where.start,
                        "commit_time": when.isoformat() + "Z",
                    }
                )
                ended = created.pop(txn.ends, None)  # a renamed table keeps its creation time
            if txn.new_table is not None:
                t = txn.new_table
                first = created.setdefault(t.qualified, ended or when)
                paths = write_table_sdi(out / "sdi", t, when, first)
                manifest["table_versions"].append(
                    {
                        "db": t.db,
                        "table": t.name,
                        "version": t.version,
                        "table_id": t.table_id,
                        "ddl": txn.ddl,
                        "gno": txn.gno,
                        "binlog_file": where.file,
                        "binlog_pos": where.start,
                        "commit_time": when.isoformat() + "Z",
                        "sdi": [str(p.relative_to(out)) for p in paths],
                    }
                )
        tables = workload.truth()
        truth = [str(truth_writer.write(t, date, rows).relative_to(out)) for t, rows in tables]
        last_file = writer.current_file.name
        if day < config.days - 1:
            writer.rotate(last_us // 1_000_000)  # a daily FLUSH BINARY LOGS
        manifest["days"].append(
            {
                "date": date.isoformat(),
                "first_binlog": first_file,
                "last_binlog": last_file,
                "last_gno": workload.gno,
                "truth": truth,
                "columns": {t.qualified: [c.name for c in t.columns] for t, _ in tables if t.name in workload.state},
                "blocked_changes": dict(workload.blocked_changes),
            }
        )
    writer.close()
    result.binlogs = list(writer.files)
    result.binlog_bytes = sum(p.stat().st_size for p in writer.files)
    result.events = {str(k): v for k, v in sorted(emitter.stats.items(), key=lambda kv: str(kv[0]))}
    result.seconds = time.perf_counter() - started
    manifest["blocked"] = workload.blocked
    manifest["binlogs"] = [{"file": p.name, "bytes": p.stat().st_size} for p in writer.files]
    manifest["counts"] = {
        "transactions": result.transactions,
        "row_changes": result.row_changes,
        "binlog_bytes": result.binlog_bytes,
        "events": result.events,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return result


def _config_json(config: GenerateConfig) -> dict:
    data = dataclasses.asdict(config)
    data["start_date"] = config.start_date.isoformat()
    data["tables"] = list(config.tables)
    return data
