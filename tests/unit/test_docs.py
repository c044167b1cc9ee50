"""The docs describe the product and cannot drift from it silently.

- No doc in `docs/` is longer than MAX_LINES: a doc says how its part works now, its settings
  and its latest figures; dated runs and what was tried go to `docs/history/` (not checked).
- Every repository path that `docs/*.md` or `README.md` names exists.

Which names are repository paths (the rule, so that a doc can still name other things):
- candidates are the text of inline code (`like/this.py`) and, in prose, a word with a `/`
  that ends in a file extension (tests/unit/test_docs.py); fenced code blocks are examples
  and are not read;
- a candidate is read as a path only when it is made of `A-Za-z0-9_.-/` alone (so no URL,
  `$OUT/...`, `<placeholder>`, glob or command line), holds a `/`, starts with neither `/`
  nor `.` (absolute and home paths are the host's), and either starts with a top-level
  directory of the repository (`tests/unit/render/`) or ends in a file extension and starts
  with the name of one of its directories (`render_svc/quota.py`); so image names
  (`storypost/edge`), MIME types, the shared spec's `spec/API-SPEC.md` and paths of other
  systems (`operator/storypost/x.json`) are not read, nor build outputs (`build/`, `.venv/`
  are not directories of the source tree);
- `path::test` and `path:line` are read as `path`;
- it exists when it is a file or directory from the repository's root, or the end of one
  (docs name modules inside their package: `render_svc/quota.py`, `browser/pool.py`), or
  `module.attribute` of such a Python module (`tests/support/mongo.stack_database`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MAX_LINES = 400

# Docs other work is splitting: allowed over MAX_LINES until that work lands. Remove an entry
# when its doc is back under the limit (test_known_exceptions_are_still_needed says so).
KNOWN_LONG: dict[str, str] = {}

# (doc, path) pairs naming what does not exist, owned by other work: allowed until it lands.
KNOWN_MISSING: dict[tuple[str, str], str] = {}

# Not part of the source tree: dependencies, caches, build outputs, local data.
NOT_SOURCE = {
    ".git",
    ".venv",
    "node_modules",
    "build",
    "dist",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    ".data",
    ".make",
}
EXTENSIONS = (
    "py|pyi|md|yaml|yml|json|proto|toml|sh|js|mjs|cjs|ts|txt|lock|html|css|cfg|ini|conf|j2|sql"
)
INLINE_CODE = re.compile(r"`([^`\n]+)`")
PATH_LIKE = re.compile(r"[A-Za-z0-9_.\-/]+")
FILE_NAME = re.compile(rf"\.(?:{EXTENSIONS})$")
IN_PROSE = re.compile(rf"(?<![\w/.-])([\w.-]+/[\w./-]*\.(?:{EXTENSIONS}))(?![\w/])")
LOCATION = re.compile(r"(::.*|:\d+(-\d+)?)$")


def source_entries() -> Iterator[str]:
    """Every file and directory of the source tree, relative to the root, `/`-separated."""
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_SOURCE and not d.endswith(".egg-info")]
        base = Path(folder).relative_to(ROOT).as_posix()
        prefix = "" if base == "." else base + "/"
        for name in (*dirs, *files):
            yield prefix + name


@cache
def tree() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The source tree's paths, every end of them (`a/b/c` gives `b/c` and `c`), and the
    names of its directories."""
    paths = frozenset(source_entries())
    ends = frozenset(
        "/".join(parts[i:]) for parts in (p.split("/") for p in paths) for i in range(len(parts))
    )
    directories = frozenset(p.rsplit("/", 1)[-1] for p in paths if (ROOT / p).is_dir())
    return paths, ends, directories


def top_level() -> frozenset[str]:
    """The repository's top-level directories (`tests`, `docs`, `render-svc`…)."""
    return frozenset(p for p in tree()[0] if "/" not in p and (ROOT / p).is_dir())


def docs() -> list[Path]:
    """The docs the rules hold for: `docs/*.md` (not `docs/history/`) and the README."""
    return [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]


def read_doc(name: str) -> str:
    path = ROOT / name if name == "README.md" else DOCS / name
    return path.read_text(encoding="utf-8") if path.exists() else ""


def unfenced_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            yield number, line


def named_paths(text: str) -> Iterator[tuple[int, str]]:
    """(line number, path) of every candidate the module's rule reads as a repository path."""
    tops = top_level()
    directories = tree()[2]
    for number, line in unfenced_lines(text):
        candidates = [m.group(1).strip() for m in INLINE_CODE.finditer(line)]
        candidates += IN_PROSE.findall(INLINE_CODE.sub(" ", line))
        for candidate in candidates:
            path = LOCATION.sub("", candidate).rstrip("/")
            if (
                PATH_LIKE.fullmatch(path)
                and "/" in path
                and not path.startswith((".", "/"))
                and (
                    path.split("/", 1)[0] in tops
                    or (FILE_NAME.search(path) and path.split("/", 1)[0] in directories)
                )
            ):
                yield number, path


def exists(path: str) -> bool:
    _, ends, _ = tree()
    if path in ends:
        return True
    module, _, attribute = path.rpartition(".")
    return bool(module) and attribute.isidentifier() and f"{module}.py" in ends


def test_no_doc_is_longer_than_the_limit() -> None:
    long = {
        doc.name: len(doc.read_text(encoding="utf-8").splitlines())
        for doc in sorted(DOCS.glob("*.md"))
    }
    over = {name: lines for name, lines in long.items() if lines > MAX_LINES}
    unexpected = {name: lines for name, lines in over.items() if name not in KNOWN_LONG}
    assert not unexpected, (
        f"docs over {MAX_LINES} lines (move dated runs to docs/history/, or split): {unexpected}"
    )


def test_every_path_a_doc_names_exists() -> None:
    missing = [
        f"{doc.relative_to(ROOT)}:{number}: {path}"
        for doc in docs()
        for number, path in named_paths(doc.read_text(encoding="utf-8"))
        if not exists(path) and (doc.name, path) not in KNOWN_MISSING
    ]
    assert not missing, "docs name paths that do not exist:\n" + "\n".join(missing)


def test_known_exceptions_are_still_needed() -> None:
    """An allowance outlives its reason silently otherwise."""
    fixed_long = [
        name
        for name in KNOWN_LONG
        if not (DOCS / name).exists()
        or len((DOCS / name).read_text(encoding="utf-8").splitlines()) <= MAX_LINES
    ]
    fixed_missing = [
        f"{doc}: {path}"
        for doc, path in KNOWN_MISSING
        if exists(path) or not any(p == path for _, p in named_paths(read_doc(doc)))
    ]
    assert not fixed_long, f"now within {MAX_LINES} lines, remove from KNOWN_LONG: {fixed_long}"
    assert not fixed_missing, f"no longer missing, remove from KNOWN_MISSING: {fixed_missing}"


def test_the_rule_reads_paths_and_leaves_other_names() -> None:
    """The rule itself: what it checks and what it leaves alone."""
    text = "\n".join(
        [
            "`render-svc/render_svc/quota.py`, `render_svc/quota.py`, `tests/unit/render/`",
            "see tests/unit/test_docs.py. and `tests/support/mongo.stack_database`",
            "`https://example.com/a.py` `$OUT/figures.json` `docs/*.md` `/usr/lib/x.py`",
            "`application/octet-stream` `spec/API-SPEC.md` `drafts/<org>/<uuid>.json`",
            "`tests/unit/test_docs.py::test_x` `edge/edge/app.py:12` `bench/no_such_bench.py`",
            "```",
            "tests/no_such_example.py",
            "```",
        ]
    )
    found = [path for _, path in named_paths(text)]
    assert found == [
        "render-svc/render_svc/quota.py",
        "render_svc/quota.py",
        "tests/unit/render",
        "tests/support/mongo.stack_database",
        "tests/unit/test_docs.py",
        "tests/unit/test_docs.py",
        "edge/edge/app.py",
        "bench/no_such_bench.py",
    ]
    assert [path for path in found if not exists(path)] == ["bench/no_such_bench.py"]
