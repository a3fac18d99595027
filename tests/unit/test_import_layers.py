"""The packages of capsel import each other without a loop, deferred imports included.

A package here is one folder under capsel/ (capsel.cap_engine, capsel.runner, ...) or one top-level module
(capsel.config); flows/ and tasks/ count as capsel.flows and capsel.tasks, as they are installed. Without a
loop the packages stack in layers, so no package imports one that (through others) imports it back.
"""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALLED_AS = {"capsel": REPO / "capsel", "capsel.flows": REPO / "flows", "capsel.tasks": REPO / "tasks"}


def package_of(module: str) -> str | None:
    """capsel.cap_engine.engine -> capsel.cap_engine; capsel.config -> capsel.config; other roots -> None."""
    parts = module.split(".")
    if parts[0] != "capsel" or len(parts) < 2:
        return None
    return ".".join(parts[:2])


def imported_modules(path: Path) -> set[str]:
    """Every absolute module name that the file imports, at any depth (deferred imports too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for root_name, root in INSTALLED_AS.items():
        for path in root.rglob("*.py"):
            relative = path.relative_to(root).with_suffix("").parts
            source = root_name if root_name != "capsel" else package_of(".".join(("capsel", *relative)))
            if source is None:
                continue
            targets = {package_of(name) for name in imported_modules(path)} - {None, source}
            graph.setdefault(source, set()).update(t for t in targets if t is not None)
    return graph


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_loops_are_found_in_a_known_graph():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert loops(graph) == [["a", "b", "c"]]


def test_capsel_packages_import_each_other_without_a_loop():
    graph = import_graph()
    assert {"capsel.cap_engine", "capsel.runner", "capsel.stages", "capsel.flows", "capsel.tasks"} <= set(graph)
    assert "capsel.scorers" in graph["capsel.runner"]  # the graph sees real edges
    assert loops(graph) == []


@pytest.mark.parametrize("low, high", [
    ("capsel.cap_engine", "capsel.scorers"), ("capsel.scorers", "capsel.runner"), ("capsel.runner", "capsel.stages"),
    ("capsel.stages", "capsel.tasks"), ("capsel.tasks", "capsel.flows"), ("capsel.stages", "capsel.cli"),
])
def test_a_lower_layer_never_reaches_a_higher_one(low, high):
    graph = import_graph()
    reached, todo = set(), [low]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in reached:
                reached.add(nxt)
                todo.append(nxt)
    assert high not in reached
