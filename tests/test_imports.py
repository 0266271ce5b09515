"""The import graph: no file cycles, nothing imports upward (ARCHITECTURE.md's layer table).

Every ``import`` and ``from ... import`` of ``workbench/`` and ``phone_runner/`` counts, wherever it
sits: module level, inside a function, under ``if TYPE_CHECKING:``. An import hidden in a function
still ties two files together; moving it there only hides a cycle from Python's loader.

The layers are read from ARCHITECTURE.md's table (row order, lowest first; every backticked
``workbench/...`` or ``phone_runner/...`` path in a row's Files column belongs to that row). A file may
import its own layer or any layer above it in the table, never one below.

``KNOWN_CYCLES`` and ``KNOWN_UPWARD`` name what is still to be fixed. They may only shrink: an entry
that no longer occurs fails the test until it is removed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("workbench", "phone_runner")

# Still to be fixed; each set is one strongly connected group of files.
KNOWN_CYCLES: tuple[frozenset[str], ...] = (
)
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    line: int


def modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``packages``."""
    out = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    """The file an imported name lives in: the longest dotted prefix that is a module here."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def imports(mods: dict[str, Path]) -> list[Edge]:
    """Every import between two files of ``mods`` (module level and inside functions alike)."""
    edges = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base_name = ".".join(base + ([node.module] if node.module else []))
                else:
                    base_name = node.module or ""
                targets = [f"{base_name}.{a.name}" for a in node.names]
            for target in targets:
                dst = _owner(target, mods)
                if dst is not None and dst != name:
                    edges.append(Edge(name, dst, node.lineno))
    return edges


def cycles(mods: Iterable[str], edges: Iterable[Edge]) -> list[frozenset[str]]:
    """Strongly connected groups of more than one file (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for e in edges:
        graph[e.src].add(e.dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.add(w)
                    if w == v:
                        break
                if len(group) > 1:
                    groups.append(frozenset(group))
    return groups


def layer_table(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """(layer, path prefixes) per row of the first markdown table whose header starts ``| Layer |``."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("| Layer |"):
            inside = True
            continue
        if inside and not line.startswith("|"):
            break
        if inside and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            paths = tuple(p for p in re.findall(r"`([^`]+)`", cells[1]) if p.startswith(PACKAGES))
            rows.append((cells[0], paths))
    return rows


def layer_of(module: str, path: Path, root: Path, table: list[tuple[str, tuple[str, ...]]]) -> int | None:
    """Row index of the most specific table path that holds ``path``."""
    rel = path.relative_to(root).as_posix()
    best: tuple[int, int] | None = None
    for i, (_, prefixes) in enumerate(table):
        for p in prefixes:
            if rel == p or (p.endswith("/") and rel.startswith(p)):
                if best is None or len(p) > best[1]:
                    best = (i, len(p))
    return None if best is None else best[0]


def upward(mods: dict[str, Path], edges: Iterable[Edge], root: Path,
           table: list[tuple[str, tuple[str, ...]]]) -> list[Edge]:
    rank = {m: r for m, p in mods.items() if (r := layer_of(m, p, root, table)) is not None}
    return [e for e in edges if e.src in rank and e.dst in rank and rank[e.dst] > rank[e.src]]


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, Path], list[Edge], list[tuple[str, tuple[str, ...]]]]:
    mods = modules(ROOT)
    return mods, imports(mods), layer_table((ROOT / "ARCHITECTURE.md").read_text())


def test_every_file_has_a_layer(graph) -> None:
    mods, _, table = graph
    assert [name for name, _ in table][:2] == ["Base", "Decoding core"], table
    homeless = [m for m, p in mods.items() if layer_of(m, p, ROOT, table) is None]
    assert not homeless, f"files in no layer of ARCHITECTURE.md's table: {homeless}"


def test_nothing_imports_upward(graph) -> None:
    mods, edges, table = graph
    def layer(m: str) -> str:
        return table[layer_of(m, mods[m], ROOT, table) or 0][0]

    found = upward(mods, edges, ROOT, table)
    new = sorted({f"{mods[e.src].relative_to(ROOT)}:{e.line} imports {e.dst} ({layer(e.dst)} sits above {layer(e.src)})"
                  for e in found if (e.src, e.dst) not in KNOWN_UPWARD})
    assert not new, "upward imports:\n" + "\n".join(new)
    stale = KNOWN_UPWARD - {(e.src, e.dst) for e in found}
    assert not stale, f"fixed, so remove from KNOWN_UPWARD: {sorted(stale)}"


def test_no_file_cycles(graph) -> None:
    mods, edges, _ = graph
    found = cycles(mods, edges)
    new = [sorted(g) for g in found if not any(g <= known for known in KNOWN_CYCLES)]
    assert not new, f"import cycles between files: {new}"
    stale = [sorted(k) for k in KNOWN_CYCLES if not any(g <= k for g in found)]
    assert not stale, f"fixed, so remove from KNOWN_CYCLES: {stale}"


def test_decoding_imports_no_torch() -> None:
    for path in sorted((ROOT / "workbench" / "decoding").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            assert not any(n == "torch" or n.startswith("torch.") for n in names), f"{path}:{node.lineno}"


def test_the_checks_see_hidden_cycles_and_upward_imports(tmp_path: Path) -> None:
    """The analysis itself: an in-function import closing a cycle, a relative import, an upward one."""
    pkg = tmp_path / "workbench"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    for f in ("__init__.py", "low/__init__.py", "high/__init__.py", "high/top.py"):
        (pkg / f).write_text("")
    (pkg / "low" / "a.py").write_text("from .b import thing\n")
    (pkg / "low" / "b.py").write_text("def thing():\n    from workbench.low import a\n    return a\n")
    (pkg / "low" / "c.py").write_text("def f():\n    import workbench.high.top\n")
    table = layer_table("| Layer | Files |\n|---|---|\n| Low | `workbench/low/`, `workbench/__init__.py` |\n"
                        "| High | `workbench/high/` |\n\ntext\n")
    mods = modules(tmp_path, ("workbench",))
    edges = imports(mods)
    assert cycles(mods, edges) == [frozenset({"workbench.low.a", "workbench.low.b"})]
    assert [(e.src, e.dst, e.line) for e in upward(mods, edges, tmp_path, table)] == [
        ("workbench.low.c", "workbench.high.top", 2)]
