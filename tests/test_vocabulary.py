"""The lake's words are written once: every column binlake adds, the ops that name a row's kind and the checkpoint
row of a whole source are string literals in ``binlake.vocabulary`` alone; every other module of libs/binlake
imports them (read by parsing each module: a literal in a docstring or comment is no use of the word)."""

from __future__ import annotations

import ast
from pathlib import Path

from binlake import vocabulary as V

LIBS = Path(__file__).resolve().parent.parent / "libs" / "binlake"
HOME = LIBS / "vocabulary.py"
# words that mean one thing wherever they are written in the library
EVERYWHERE = (
    V.SEQ_COL,
    V.OP_COL,
    V.DUP_COL,
    V.COUNT_COL,
    V.KEY_COL,
    V.COMMIT_TS_COL,
    V.KEY_CHANGE_OP,
    V.CHUNK_END_OP,
    V.FILE_END_OP,
)
# "*" is also a JSON path wildcard and a table pattern: the source row's word in the packages of the lake
LAKE_PACKAGES = ("lake", "pipeline", "quality", "orchestration")


def _literals(path: Path) -> tuple[set[str], set[tuple[str, ...]]]:
    """The string constants of a module and its tuples of string constants (docstrings left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    patterns = {
        id(arg)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("glob", "rglob", "fnmatch")
        for arg in n.args
    }  # "*" of a file pattern
    strings = {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in docstrings
        and id(n) not in patterns
    }
    tuples = {
        tuple(e.value for e in n.elts)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Tuple, ast.List))
        and n.elts
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in n.elts)
    }
    return strings, tuples


def _modules() -> dict[Path, tuple[set[str], set[tuple[str, ...]]]]:
    return {path: _literals(path) for path in sorted(LIBS.rglob("*.py"))}


def test_each_word_is_written_in_the_vocabulary_alone() -> None:
    modules = _modules()
    assert HOME in modules and len(modules) > 100
    for word in EVERYWHERE:
        written = [str(p.relative_to(LIBS)) for p, (strings, _) in modules.items() if word in strings]
        assert written == ["vocabulary.py"], f"{word!r} is written in {written}: import it from binlake.vocabulary"
    # the change ops as a set of words (a tuple or list literal of exactly these) in the lake's packages (the
    # generator's workload has its own three statements)
    ops = [
        str(p.relative_to(LIBS))
        for p, (_, tuples) in modules.items()
        if p.relative_to(LIBS).parts[0] in LAKE_PACKAGES and V.CHANGE_OPS in tuples
    ]
    assert ops == [], f"the change ops are spelled out in {ops}: use binlake.vocabulary.CHANGE_OPS"
    source_row = [
        str(p.relative_to(LIBS))
        for p, (strings, _) in modules.items()
        if p != HOME and p.relative_to(LIBS).parts[0] in LAKE_PACKAGES and V.SOURCE_ROW in strings
    ]
    assert source_row == [], f"the source row {V.SOURCE_ROW!r} is written in {source_row}: use SOURCE_ROW"


def test_the_vocabulary_imports_nothing_of_binlake() -> None:
    """Any package may import it (no cycle can pass through it)."""
    tree = ast.parse(HOME.read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def test_the_words() -> None:
    """The values are the lake's on-disk names: renaming one here would rename a column of every table."""
    assert (V.SEQ_COL, V.OP_COL, V.DUP_COL, V.COUNT_COL) == (
        "_binlake_seq",
        "_binlake_op",
        "_binlake_dup",
        "_binlake_count",
    )
    assert (V.KEY_COL, V.COMMIT_TS_COL, V.SOURCE_ROW) == ("_binlake_key", "_binlake_commit_ts", "*")
    assert V.CHANGE_OPS == ("insert", "update", "delete") and V.END_OPS == ("file_end", "chunk_end")
    assert all(
        c.startswith(V.RESERVED_PREFIX)
        for c in (V.SEQ_COL, V.OP_COL, V.DUP_COL, V.COUNT_COL, V.KEY_COL, V.COMMIT_TS_COL)
    )
