"""No two modules of storypost_client import each other, directly or through others: read
from the sources with `ast`, counting imports made only for type checkers too (a circle there
still ties the modules together for a reader)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import storypost_client

PACKAGE = "storypost_client"
ROOT = Path(storypost_client.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imported(name: str, path: Path, known: Mapping[str, Path]) -> Iterator[str]:
    """The package's modules that the module `name` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            if base not in known:
                continue
            for alias in node.names:
                # `from storypost_client import bulk_plan` imports the submodule.
                submodule = f"{base}.{alias.name}"
                yield submodule if submodule in known else base


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {
        name: {target for target in imported(name, path, known) if target != name}
        for name, path in known.items()
    }


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_modules_import_each_other_in_a_circle() -> None:
    graph = import_graph()
    assert f"{PACKAGE}.bulk_run" in graph[f"{PACKAGE}.sync_client"]  # the graph is read
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_circle_through_a_third_module() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_planning_calls_nothing_and_running_imports_no_client() -> None:
    graph = import_graph()
    clients = {f"{PACKAGE}.sync_client", f"{PACKAGE}.async_client", PACKAGE}
    assert not graph[f"{PACKAGE}.bulk_plan"] & (clients | {f"{PACKAGE}.bulk_run"})
    assert not graph[f"{PACKAGE}.bulk_run"] & clients
