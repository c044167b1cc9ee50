"""Every third-party package a component imports is declared in the extra it installs with.

Each component (an image, the CLI, the SDK, the test suite) is read with `ast`: its own modules
and every first-party module they import, transitively, at any depth (an import inside a
function runs too). Imports under `if TYPE_CHECKING:` and imports guarded by
`except ImportError` are optional and left out; of `if sys.version_info …:`, only the branch
this Python takes is read (the SDK imports typing_extensions on 3.10 only, declared so). Each
imported module is mapped to the distribution that installs it
(importlib.metadata.packages_distributions()); that distribution must be required by the
component's extras, not merely pulled in by something else.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name

from tests.unit.dependency_support import ROOT, client_project, names, requirements

# The folders on sys.path of the editable install (pyproject.toml's dev-mode-dirs), the SDK's,
# and the repository root (tests, scripts, bench): their modules are first-party. The SDK
# (storypost_client, which the CLI's caller commands import) counts as first-party too: it is
# this repository's own distribution, installed beside storypost by `make venv`; the `cli`
# extra cannot name it while it is on no index.
SOURCE_ROOTS = [
    ROOT / d
    for d in (
        "protos",
        "testing",
        "runtime",
        "edge",
        "account-svc",
        "render-svc",
        "publish-svc",
        "webhook-svc",
        "sandbox-net",
        "cli",
        "client",
    )
] + [ROOT, ROOT / "scripts", ROOT / "scripts" / "images", ROOT / "bench"]

# Each component: its folder (or file) and the extras it is installed with.
COMPONENTS: Mapping[str, tuple[str, ...]] = {
    "edge/edge": ("edge",),
    "account-svc/account_svc": ("account",),
    "render-svc/render_svc": ("render",),
    "publish-svc/publish_svc": ("publish",),
    "webhook-svc/webhook_svc": ("webhook",),
    "sandbox-net/sandbox_net": ("sandbox",),
    "cli/storypost_cli": ("cli",),
    # The mongoeco image installs only mongoeco[wire] and runs this package.
    "cli/storypost_cli/embedded_mongo": ("embedded",),
    "testing/storypost": ("all", "dev"),
    "tests": ("all", "dev"),
    "scripts": ("all", "dev"),
    "bench": ("all", "dev"),
}
CLIENT = "client/storypost_client"
# The SDK's caller CLI: installed with the SDK's `cli` extra; the rest of the SDK without it.
CLIENT_CLI = "client/storypost_client/cli"
SKIPPED_FILES = ("_pb2.py", "_pb2_grpc.py")


@dataclass(frozen=True)
class Import:
    module: str
    path: Path
    line: int


def is_import_guard(node: ast.Try) -> bool:
    for handler in node.handlers:
        caught = handler.type
        caught_names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
        if any(
            isinstance(name, ast.Name) and name.id in {"ImportError", "ModuleNotFoundError"}
            for name in caught_names
        ):
            return True
    return False


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def version_check(node: ast.If) -> bool | None:
    """Whether this Python takes an `if sys.version_info >= (3, 11):`; None for other tests."""
    test = node.test
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and ast.unparse(test.left) == "sys.version_info"
    ):
        return None
    bound = ast.literal_eval(test.comparators[0])
    operators = {ast.GtE: "__ge__", ast.Gt: "__gt__", ast.Lt: "__lt__", ast.LtE: "__le__"}
    operator = operators.get(type(test.ops[0]))
    return None if operator is None else bool(getattr(sys.version_info, operator)(bound))


def imports_of(tree: ast.AST, path: Path, package: str) -> Iterator[Import]:
    """Absolute module names imported by `tree`, skipping optional and type-only imports."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and is_type_checking(node):
            yield from imports_of(ast.Module(node.orelse, []), path, package)
            continue
        if isinstance(node, ast.If) and (taken := version_check(node)) is not None:
            branch = node.body if taken else node.orelse
            yield from imports_of(ast.Module(branch, []), path, package)
            continue
        if isinstance(node, ast.Try) and is_import_guard(node):
            for part in (node.orelse, node.finalbody):
                yield from (i for child in part for i in imports_of(child, path, package))
            continue
        if isinstance(node, ast.Import):
            yield from (Import(alias.name, path, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1] if node.level > 1 else base
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield Import(module, path, node.lineno)
            # `from package import module` imports a module too.
            yield from (
                Import(f"{module}.{alias.name}", path, node.lineno)
                for alias in node.names
                if alias.name != "*"
            )
        else:
            yield from imports_of(node, path, package)


def python_files(path: Path) -> list[Path]:
    files = [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [
        f
        for f in files
        if not f.name.endswith(SKIPPED_FILES)
        and not {".venv", ".data", "build", "node_modules"} & set(f.relative_to(ROOT).parts)
    ]


@cache
def first_party_file(module: str) -> Path | None:
    """The file of a first-party module (a package's __init__.py), or None."""
    parts = module.split(".")
    for root in SOURCE_ROOTS:
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        if base.is_dir() and root != ROOT and parts[0] != "tests":
            return base  # a namespace package (storypost/)
    return None


@cache
def top_level_first_party() -> frozenset[str]:
    found = set()
    for root in SOURCE_ROOTS:
        for child in root.iterdir():
            if child.suffix == ".py" or (child.is_dir() and any(child.rglob("*.py"))):
                found.add(child.stem if child.suffix == ".py" else child.name)
    return frozenset(found - {".venv", "build", "node_modules"})


def package_of(path: Path) -> str:
    for root in SOURCE_ROOTS:
        if path.is_relative_to(root) and root != ROOT:
            parts = path.relative_to(root).with_suffix("").parts
            break
    else:
        parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts if path.name == "__init__.py" else parts[:-1])


def third_party_imports(start: Path, *, leaving: Path | None = None) -> list[Import]:
    """Third-party imports of the files under `start` and of every first-party module they
    import, transitively (the files under `leaving` left out)."""
    pending = python_files(start)
    if leaving is not None:
        pending = [f for f in pending if not f.is_relative_to(leaving)]
    seen: set[Path] = set()
    found: list[Import] = []
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        package = package_of(path)
        # A module runs after its package's __init__.py (and those above it).
        parts = package.split(".") if package else []
        for depth in range(1, len(parts) + 1):
            parent = first_party_file(".".join(parts[:depth]))
            if parent is not None and parent.is_file():
                pending.append(parent)
        tree = ast.parse(path.read_text(), str(path))
        for imported in imports_of(tree, path, package):
            top = imported.module.split(".")[0]
            if not top or top in sys.stdlib_module_names or top == "__future__":
                continue
            if top in top_level_first_party():
                target = first_party_file(imported.module)
                if target is not None and target.is_file():
                    pending.append(target)
                # Importing a.b.c runs a/__init__.py and a/b/__init__.py first.
                parts = imported.module.split(".")
                for depth in range(1, len(parts)):
                    parent = first_party_file(".".join(parts[:depth]))
                    if parent is not None and parent.is_file():
                        pending.append(parent)
                continue
            found.append(imported)
    return found


@cache
def module_owners() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distributions_of(module: str) -> set[NormalizedName]:
    """The distributions that install `module` (for a namespace such as google, the one that
    has its sub-package)."""
    parts = module.split(".")
    candidates = module_owners().get(parts[0], [])
    if len(candidates) > 1 and len(parts) > 1:
        prefix = "/".join(parts[:2])
        owning = [
            d
            for d in candidates
            if any(
                str(f).startswith(f"{prefix}/") or str(f) == f"{prefix}.py"
                for f in importlib.metadata.distribution(d).files or []
            )
        ]
        candidates = owning or candidates
    return {canonicalize_name(d) for d in candidates}


def undeclared(
    start: str, declared: set[NormalizedName], *, leaving: str | None = None
) -> list[str]:
    problems = []
    left_out = None if leaving is None else ROOT / leaving
    for imported in third_party_imports(ROOT / start, leaving=left_out):
        owners = distributions_of(imported.module)
        where = f"{imported.path.relative_to(ROOT)}:{imported.line}"
        if not owners:
            # A from-import's names may be attributes, not modules: only whole modules count.
            if "." in imported.module and distributions_of(imported.module.split(".")[0]):
                continue
            problems.append(f"{where} imports {imported.module}, which no distribution installs")
        elif not owners & declared:
            top = imported.module.split(".")[0]
            problems.append(f"{where} imports {top} (from {' or '.join(sorted(owners))})")
    return sorted(set(problems))


def test_each_component_declares_every_package_it_imports() -> None:
    problems = []
    for start, extras in COMPONENTS.items():
        declared = names(requirements(extras))
        for problem in undeclared(start, declared):
            problems.append(f"[{', '.join(extras)}] {problem}")
    assert not problems, (
        "declare these in pyproject.toml's extra of the component, then `make lock`:\n"
        + "\n".join(problems)
    )


def test_the_sdk_declares_every_package_it_imports() -> None:
    declared = names(Requirement(r) for r in client_project()["dependencies"])
    problems = undeclared(CLIENT, declared, leaving=CLIENT_CLI)
    assert not problems, "declare these in client/pyproject.toml:\n" + "\n".join(problems)


def test_the_sdk_cli_extra_declares_every_package_the_caller_cli_imports() -> None:
    client = client_project()
    declared = names(
        Requirement(r) for r in [*client["dependencies"], *client["optional-dependencies"]["cli"]]
    )
    problems = undeclared(CLIENT_CLI, declared)
    assert not problems, "declare these in client/pyproject.toml's cli extra:\n" + "\n".join(
        problems
    )


def test_the_walk_reads_only_the_branch_of_a_version_check_this_python_takes() -> None:
    tree = ast.parse(
        "import sys\nif sys.version_info >= (3, 11):\n    import tomllib\nelse:\n    import tomli\n"
    )
    modules = {i.module for i in imports_of(tree, Path("x.py"), "")}
    assert modules == {"sys", "tomllib"}


def test_the_walk_follows_first_party_imports_and_skips_optional_ones() -> None:
    """The runtime's s3 module (aioboto3) is reached from render-svc; grpc_server's optional
    botocore import is not counted for the services without the s3 extra."""
    render = {i.module.split(".")[0] for i in third_party_imports(ROOT / "render-svc/render_svc")}
    assert {"aioboto3", "grpc", "pymongo", "playwright"} <= render
    tree = ast.parse((ROOT / "runtime/storypost_runtime/grpc_server.py").read_text())
    modules = {i.module for i in imports_of(tree, Path("grpc_server.py"), "storypost_runtime")}
    assert "pymongo.errors" in modules and not any(m.startswith("botocore") for m in modules)
