"""Issue #53 item 5: the app's pages are a package of their own (`edge.web`) that
`python -m edge` mounts; no module of the API edge imports it."""

from __future__ import annotations

import ast
from pathlib import Path

EDGE = Path(__file__).resolve().parents[3] / "edge" / "edge"


def imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_no_module_of_the_api_edge_imports_the_app() -> None:
    api = [
        path
        for path in EDGE.rglob("*.py")
        if "web" not in path.relative_to(EDGE).parts and path.name != "__main__.py"
    ]
    assert len(api) > 30
    importing = sorted(
        str(path.relative_to(EDGE))
        for path in api
        if any(name == "edge.web" or name.startswith("edge.web.") for name in imported(path))
    )
    assert importing == []
    assert "edge.web" in imported(EDGE / "__main__.py")  # the one place that mounts it
