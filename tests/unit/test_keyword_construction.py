"""Issue #53 item 4: a `@component` with more than two collaborators is built by keyword only
(`PostIntake(store=..., quota=..., ...)`), so none can be wired in the wrong order; each such
class opens its fields with `_: KW_ONLY`. Read from the source (nothing is imported)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = (
    "runtime", "edge", "account-svc", "render-svc", "publish-svc", "webhook-svc", "sandbox-net",
    "cli", "client", "testing", "tests", "bench", "scripts",
)  # fmt: skip
MOST_POSITIONAL = 2


@dataclass(frozen=True)
class Declared:
    path: Path
    node: ast.ClassDef

    def fields(self) -> tuple[list[str], int | None]:
        """Its own init fields, and how many come before `_: KW_ONLY` (None: no marker)."""
        names: list[str] = []
        marker = None
        for statement in self.node.body:
            if not isinstance(statement, ast.AnnAssign) or not isinstance(
                statement.target, ast.Name
            ):
                continue
            annotation = ast.unparse(statement.annotation)
            if annotation == "KW_ONLY":
                marker = len(names)
            elif "ClassVar" not in annotation and not _not_in_init(statement.value):
                names.append(statement.target.id)
        return names, marker


def _not_in_init(value: ast.expr | None) -> bool:
    return (
        isinstance(value, ast.Call)
        and ast.unparse(value.func).endswith("field")
        and any(
            k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in value.keywords
        )
    )


def components() -> dict[str, list[Declared]]:
    found: dict[str, list[Declared]] = {}
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            if "generated" in path.parts or path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and any(
                    ast.unparse(d).endswith("component") for d in node.decorator_list
                ):
                    found.setdefault(node.name, []).append(Declared(path, node))
    return found


def test_components_with_more_than_two_collaborators_take_keywords_only() -> None:
    found = components()

    def positional(declared: Declared) -> tuple[int, int]:
        """(init fields in all, positional ones) of a class and its component bases."""
        total = positional_count = 0
        for base in declared.node.bases:
            name = ast.unparse(base).split(".")[-1].split("[")[0]
            if len(found.get(name, [])) == 1:
                more, more_positional = positional(found[name][0])
                total += more
                positional_count += more_positional
        names, marker = declared.fields()
        return total + len(names), positional_count + (len(names) if marker is None else marker)

    wrong = []
    for name, declared in found.items():
        for one in declared:
            total, positional_count = positional(one)
            if total > MOST_POSITIONAL and positional_count:
                wrong.append(
                    f"{one.path.relative_to(ROOT)}: {name} ({positional_count} of {total})"
                )
    assert len(found) > 100  # the reading found the components
    assert not wrong, "open their fields with `_: KW_ONLY`:\n" + "\n".join(sorted(wrong))
