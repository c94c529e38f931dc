"""Spark failures, told like the rest of binlake: one line naming the stage, what ran out or failed, and what to
change; the full JVM and Python trace goes to a log file under ``<lake>/logs/`` whose path the line gives."""

from __future__ import annotations

import datetime as dt
import os
import re
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional

from binlake.errors import BinlakeError
from binlake.lake.errors import SparkJobFailed, SparkStartFailed

if TYPE_CHECKING:
    from binlake.lake.layout import LakeLayout

# (text found in the failure, what happened, what to do), first match wins
_DIAGNOSES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (
        ("OutOfMemoryError", "Java heap space", "GC overhead limit exceeded"),
        "Spark ran out of Java heap memory",
        "give it more (binlake run --driver-memory 4g, or spark.driver.memory / spark.executor.memory for "
        "spark-submit) or make tasks smaller (binlake run --chunk-mb 32)",
    ),
    (
        ("ExecutorLostFailure", "Lost executor", "executor lost", "Executor heartbeat timed out"),
        "a Spark executor was lost (killed, out of memory, or its worker stopped)",
        "check the worker's log and memory (spark.executor.memory, spark.executor.memoryOverhead)",
    ),
    (
        ("Python worker exited unexpectedly", "crashed", "EOFError"),
        "a Python worker of a Spark task died (often the machine ran out of memory)",
        "raise spark.executor.memoryOverhead or make tasks smaller (binlake run --chunk-mb 32)",
    ),
    (
        ("Answer from Java side is empty", "Connection refused", "Py4JNetworkError", "JVM is not running"),
        "the Spark driver's JVM stopped (often out of memory)",
        "give it more memory (binlake run --driver-memory 4g, or spark.driver.memory)",
    ),
)


# what a JVM that can not start prints around its reason (HotSpot's launcher, ``vm_exit_during_initialization``)
_JVM_EXIT_LINES = (
    "Error: Could not create the Java Virtual Machine.",
    "Error: A fatal exception has occurred.",
    "Error occurred during initialization of VM",
)
_REASON_WORDS = re.compile(r"error|exception|invalid|unrecogni[sz]ed|conflicting|not found|no such|could not|cannot")
_JAVA_RAISED = re.compile(r"^:?\s*(java|org|scala|io)\.[\w.$]+(Error|Exception)\b")
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b(: .*)?$")


def is_spark_failure(exc: BaseException) -> bool:
    """Whether ``exc`` comes from Spark's JVM or its Python workers (not a binlake error, not a bug here)."""
    names = {c.__module__.split(".")[0] for c in type(exc).__mro__}
    return bool(names & {"py4j", "pyspark"}) or isinstance(exc, ConnectionRefusedError)


def diagnose(text: str) -> tuple[str, str]:
    """(what happened, what to do: "" when nothing but the log's trace can tell) for a Spark failure's text."""
    for needles, what, todo in _DIAGNOSES:
        if any(n in text for n in needles):
            return what, todo
    raised = [line.strip() for line in text.splitlines() if _RAISED.match(line.strip())]
    ours = _binlake_error_names()
    for line in reversed(raised if "PythonException" in text else []):
        name, _, message = line.partition(": ")
        if name.rsplit(".", 1)[-1] in ours:  # a binlake error raised on an executor: its own line says it all
            return message[:600] or name, ""
    if "PythonException" in text and raised:
        return (
            f"a Python task failed with {raised[-1][:300]}",
            "please report it with the log (the input may be unusual)",
        )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = _java_exception(text) or (lines[0] if lines else "no message")
    return f"a Spark job failed: {first[:300]}", ""


def _java_exception(text: str) -> Optional[str]:
    """The JVM's exception line of a failure's text (a Py4JJavaError's first line only names the JVM call; the
    exception is on a line of its own); None without one."""
    return next((s.lstrip(": ") for line in text.splitlines() if _JAVA_RAISED.match(s := line.strip())), None)


def jvm_exit_reason(output: str) -> Optional[str]:
    """The line of a JVM's launch output that says why it did not start (e.g. ``Invalid maximum heap size:
    -Xmx3x``), not the launcher's lines around it; None when the output holds none."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    specific = [line for line in lines if not line.startswith(_JVM_EXIT_LINES)]
    reasons = [line for line in specific if _REASON_WORDS.search(line.lower())]
    chosen = reasons or specific
    return chosen[-1] if chosen else None


def start_failed(exc: BaseException, log_file: Optional[str]) -> SparkStartFailed:
    """:class:`SparkStartFailed` for ``exc``, raised while a Spark session started: one line with the JVM's reason
    (its launch output in ``log_file``, or the Java exception the SparkContext raised) and what to check. The
    Python trace is appended to ``log_file``."""
    text = f"{type(exc).__name__}: {exc}"
    output = ""
    if log_file:
        try:
            with open(log_file, "a+", encoding="utf-8", errors="replace") as f:
                f.seek(0)
                output = f.read()[-8192:]
                f.write("\n" + "".join(traceback.format_exception(exc)))
        except OSError:
            log_file = None
    java = _java_exception(text)
    if java is None and "JAVA_GATEWAY_EXITED" in text:
        java = jvm_exit_reason(output) if log_file else "its JVM exited at launch (its output is above)"
    reason = java or text.splitlines()[0]
    return SparkStartFailed(
        f"Spark did not start: {reason[:300]}. Check the Spark settings binlake was given (--driver-memory, --conf, "
        "spark-defaults.conf) and that `java -version` shows Java 17 or 21"
        + (f"; Spark's output and the trace: {log_file}" if log_file else "")
    )


def _binlake_error_names() -> set[str]:
    """The class names of binlake's errors (every subclass of :class:`BinlakeError` imported)."""
    out, todo = set(), [BinlakeError]
    while todo:
        cls = todo.pop()
        out.add(cls.__name__)
        todo.extend(cls.__subclasses__())
    return out


def log_path(logs_dir: str, name: str) -> Optional[str]:
    """A new log file's path, ``<logs_dir>/<UTC time>-<name>.log`` (the folder created); None if it can not be
    made."""
    try:
        Path(logs_dir).mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    return os.path.join(logs_dir, f"{stamp}-{name}.log")


def write_log(logs_dir: str, stage_name: str, exc: BaseException) -> Optional[str]:
    """The full trace of ``exc`` in ``<logs_dir>/<UTC time>-<stage>.log``; None if it can not be written."""
    path = log_path(logs_dir, stage_name)
    if path is None:
        return None
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(traceback.format_exception(exc)))
        return path
    except OSError:
        return None


@contextmanager
def stage(name: str, lake: "LakeLayout") -> Iterator[None]:
    """Run a pipeline stage; a Spark failure inside becomes :class:`SparkJobFailed` (one line, trace logged).
    Everything the stage committed before stays valid: a rerun converges."""
    try:
        yield
    except BinlakeError:
        raise
    except Exception as exc:
        if not is_spark_failure(exc):
            raise
        what, todo = diagnose(f"{type(exc).__name__}: {exc}")
        log = write_log(lake.logs, name, exc)
        if log is None:  # no log to point at: say nothing of one
            todo = todo.replace(" with the log", "")
        parts = [what, todo, f"full trace in {log}" if log else ""]
        raise SparkJobFailed(
            f"{name} failed: {'; '.join(p for p in parts if p)}. Rerunning after the fix is safe "
            "(committed work is kept, nothing is applied twice)"
        ) from None
