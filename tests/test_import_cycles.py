"""The packages of libs/binlake import one another one way: the graph of package-level imports (every ``import``
of every module, those inside functions included, but not those only for type checkers) has no cycle. ``KNOWN``
is empty: any cycle fails (a known one that is gone fails too, should the list ever hold one again)."""

from __future__ import annotations

import ast
from pathlib import Path

LIBS = Path(__file__).resolve().parent.parent / "libs" / "binlake"

# package pairs that still import each other, and where: none (a cycle found fails the test)
KNOWN: dict[frozenset[str], str] = {}


def _node(rel: Path) -> str:
    """A module's package (its first folder under binlake), or the module's name at the top."""
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _type_checking_only(tree: ast.Module) -> set[int]:
    """ids of the imports inside ``if TYPE_CHECKING:`` blocks."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            out.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return out


def import_graph() -> dict[str, dict[str, set[str]]]:
    """package -> imported package -> the modules that import it."""
    nodes = {_node(p.relative_to(LIBS)) for p in LIBS.rglob("*.py")}
    graph: dict[str, dict[str, set[str]]] = {}
    for path in sorted(LIBS.rglob("*.py")):
        rel = path.relative_to(LIBS)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        skip = _type_checking_only(tree)
        for n in ast.walk(tree):
            if id(n) in skip:
                continue
            if isinstance(n, ast.Import):
                names = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom) and n.level == 0 and n.module:
                names = [n.module] + [f"{n.module}.{a.name}" for a in n.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] == "binlake" and len(parts) > 1 and parts[1] in nodes and parts[1] != _node(rel):
                    graph.setdefault(_node(rel), {}).setdefault(parts[1], set()).add(str(rel))
    return graph


def cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_packages() -> None:
    graph = import_graph()
    assert {"binlog", "pipeline", "lake", "snapshot", "quality", "orchestration", "cli"} <= set(graph)
    found = {frozenset(c) for c in cycles(graph)}
    new = [sorted(c) for c in found - set(KNOWN)]
    detail = {
        " <-> ".join(c): {f"{a} -> {b}": sorted(graph[a][b]) for a in c for b in c if b in graph.get(a, {})}
        for c in new
    }
    assert not new, f"import cycles between packages: {detail}"
    gone = [sorted(c) for c in set(KNOWN) - found]
    assert not gone, f"these cycles are gone: take them off KNOWN: {gone}"


def test_the_walk_finds_a_cycle() -> None:
    """The check itself: a two-package loop and a three-package loop are found, a chain is not."""
    loop = {"a": {"b": {"a/x.py"}}, "b": {"c": {"b/y.py"}}, "c": {"a": {"c/z.py"}}, "d": {"a": {"d/w.py"}}}
    assert cycles(loop) == [["a", "b", "c"]]
    assert cycles({"a": {"b": set()}, "b": {"c": set()}}) == []
