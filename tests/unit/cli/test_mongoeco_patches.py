"""The table of mongoeco patches is the whole truth: every function that patches mongoeco is in
it, each says what it fixes, and each names tests that exist (tests/unit/cli/
test_embedded_mongo*.py, where each test fails without its patch)."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import get_args

from storypost_cli.embedded_mongo.patches import PATCHES, Fixes

ROOMS = ("writes", "reads", "indexes", "changes")
TESTS = sorted(Path(__file__).parent.glob("test_embedded_mongo*.py"))


def _called(node: ast.FunctionDef) -> set[str]:
    return {
        call.func.id
        for call in ast.walk(node)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
    }


def patching_functions() -> set[str]:
    """Public functions of the patch rooms that replace a mongoeco function (themselves, or
    through a private helper of their room that does)."""
    found = set()
    for room in ROOMS:
        module = importlib.import_module(f"storypost_cli.embedded_mongo.{room}")
        tree = ast.parse(inspect.getsource(module))
        functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
        replacing = {"replace_once"} | {
            node.name
            for node in functions
            if node.name.startswith("_") and "replace_once" in _called(node)
        }
        found |= {
            node.name
            for node in functions
            if not node.name.startswith("_") and _called(node) & replacing
        }
    return found


def embedded_mongo_tests() -> set[str]:
    """The names of the tests of test_embedded_mongo*.py."""
    names = [
        node.name
        for path in TESTS
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    ]
    assert len(names) == len(set(names)), "two tests of the patches share a name"
    return set(names)


def test_every_patch_is_in_the_table_once() -> None:
    names = [patch.name for patch in PATCHES]
    assert len(names) == len(set(names))
    assert set(names) == patching_functions()


def test_each_patch_says_what_it_fixes_and_names_tests_that_exist() -> None:
    tests = embedded_mongo_tests()
    for patch in PATCHES:
        assert patch.fixes in get_args(Fixes), patch.name
        assert patch.tests, f"{patch.name} names no test"
        assert set(patch.tests) <= tests, (patch.name, set(patch.tests) - tests)
        assert patch.apply.__doc__, f"{patch.name} does not say what it fixes"


def test_every_test_of_the_patches_is_claimed_by_one() -> None:
    """No test of test_embedded_mongo*.py stands for a patch that is gone."""
    tests = embedded_mongo_tests()
    claimed = {name for patch in PATCHES for name in patch.tests}
    assert tests <= claimed, tests - claimed
