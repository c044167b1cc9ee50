"""Issue #24 item 1: each vocabulary is written once (storypost_runtime.vocabulary) and every
other list derives from it: the protos' enums, account-svc's platform catalog, the catalog's
JSON Schemas and the SDK generated from them agree with it, and no production module writes
one of its lists out again."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from account_svc.connections import platforms as catalog_platforms
from edge.catalog.registry import build_catalog
from storypost.publish.v1 import publish_pb2
from storypost.render.v1 import render_pb2
from storypost_client import polling
from storypost_client.generated import types as sdk_types
from storypost_runtime import vocabulary as v

ROOT = Path(__file__).resolve().parents[3]
# Production code: every component, the SDK and the CLIs (generated code and tests aside).
SOURCES = (
    "account-svc",
    "edge",
    "publish-svc",
    "render-svc",
    "webhook-svc",
    "sandbox-net",
    "cli",
    "client/storypost_client",
    "runtime",
    "testing",
)
# The catalog's examples show single values (a platform name in a sample answer); a list of
# them is still a copy there.
EXAMPLES = ROOT / "edge" / "edge" / "catalog"
# Twins kept on purpose (docs/architecture.md), each checked equal below.
KEPT_TWINS = {"client/storypost_client/polling.py"}
# Vocabularies whose words are never written out one by one either (the others' words, like
# "ready" or "failed", are common words in other senses too).
VOCABULARIES: dict[str, frozenset[str]] = {
    "platform names": frozenset(v.PLATFORM_NAMES),
    # `photoapp` and `clipapp` are also their APIs' path segments; the other keys are words of
    # the vocabulary only.
    "social platform keys": frozenset(p.key for p in v.SOCIAL_API_PLATFORMS),
    "event types": frozenset(e.name for e in v.ALL_EVENT_TYPES),
    "clipapp privacy levels": frozenset(v.CLIPAPP_PRIVACY_LEVELS),
}
# Vocabularies only checked for lists.
LIST_VOCABULARIES: dict[str, frozenset[str]] = {
    **VOCABULARIES,
    "post statuses": frozenset(v.PostStatus),
    "draft statuses": frozenset(v.DraftStatus),
}


def test_the_protos_enums_are_the_vocabularys_words() -> None:
    def values(enum: Any, prefix: str) -> set[str]:
        return {name for name in list(enum.keys()) if name != f"{prefix}_UNSPECIFIED"}

    assert values(publish_pb2.PostStatus, "POST_STATUS") == {
        v.proto_name("POST_STATUS", s) for s in v.PostStatus
    }
    assert values(publish_pb2.PostKind, "POST_KIND") == {
        v.proto_name("POST_KIND", k) for k in v.PostKind
    }
    assert values(render_pb2.DraftStatus, "DRAFT_STATUS") == {
        v.proto_name("DRAFT_STATUS", s) for s in v.DraftStatus
    }


def test_account_svc_catalogs_every_platform_of_the_vocabulary_in_its_order() -> None:
    assert tuple(p.names for p in catalog_platforms.PLATFORMS) == v.PLATFORMS


def _enums(schema: Any) -> Iterator[tuple[str, ...]]:
    if isinstance(schema, dict):
        if isinstance(schema.get("enum"), list):
            yield tuple(schema["enum"])
        for value in schema.values():
            yield from _enums(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _enums(value)


def test_the_catalogs_schemas_and_the_sdk_list_the_vocabularys_words() -> None:
    catalog = build_catalog().to_catalog_json()
    # Status enums may name a part of the statuses (a cancel answers three of them).
    for enum in _enums(catalog):
        if len(set(v.PostStatus) & set(enum)) >= 2:
            assert set(enum) <= set(v.PostStatus), enum
    known: dict[frozenset[str], set[tuple[str, ...]]] = {
        frozenset(v.CLIPAPP_PRIVACY_LEVELS): {v.CLIPAPP_PRIVACY_LEVELS},
        frozenset(v.PLATFORM_NAMES): {v.PLATFORM_NAMES},
        frozenset(v.DraftStatus): {tuple(v.DraftStatus)},
    }
    seen = 0
    for enum in _enums(catalog):
        for words, allowed in known.items():
            if len(words & set(enum)) >= 2:
                assert enum in allowed, f"a schema lists {enum}, not the vocabulary's words"
                seen += 1
    assert seen >= 3, "the catalog's platform, privacy and draft status enums were not found"
    assert get_args(sdk_types.PostStatus) == tuple(v.PostStatus)
    assert get_args(sdk_types.PrivacyLevel) == v.CLIPAPP_PRIVACY_LEVELS


def _modules() -> Iterator[Path]:
    for source in SOURCES:
        for path in (ROOT / source).rglob("*.py"):
            if "_pb2" in path.name or "generated" in path.parts or path.name == "vocabulary.py":
                continue
            if str(path.relative_to(ROOT)) in KEPT_TWINS:
                continue
            yield path


def copies_in(tree: ast.AST, *, single_values_allowed: bool) -> list[str]:
    """Where a module writes the vocabulary's words itself: a literal list, tuple, set or dict
    holding two words of one vocabulary (a copy of the list), or, unless allowed, one word."""
    found: list[tuple[int, str]] = []
    in_lists: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            constants = [i for i in items if isinstance(i, ast.Constant)]
            for name, vocabulary in LIST_VOCABULARIES.items():
                listed = [c for c in constants if c.value in vocabulary]
                if len({c.value for c in listed}) >= 2:
                    found.append((node.lineno, f"a list of {name}"))
                    in_lists.update(id(c) for c in listed)
    if not single_values_allowed:
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for name, vocabulary in VOCABULARIES.items():
                    if node.value in vocabulary and id(node) not in in_lists:
                        found.append((node.lineno, f"{node.value!r} ({name})"))
    return [f"line {line}: {what}" for line, what in sorted(found)]


def test_no_production_module_writes_a_vocabulary_out_again() -> None:
    copies = {
        str(path.relative_to(ROOT)): found
        for path in _modules()
        if (
            found := copies_in(
                ast.parse(path.read_text()), single_values_allowed=EXAMPLES in path.parents
            )
        )
    }
    assert copies == {}, "use storypost_runtime.vocabulary instead"


def test_the_copy_check_finds_copies() -> None:
    copied = ast.parse(
        'EVENTS = ("social_post.status_changed", "clipapp_post.status_changed")\n'
        'if platform == "PINBOARD": pass\n'
    )
    assert copies_in(copied, single_values_allowed=False) == [
        "line 1: a list of event types",
        "line 2: 'PINBOARD' (platform names)",
    ]
    assert copies_in(copied, single_values_allowed=True) == ["line 1: a list of event types"]


def test_the_sdks_kept_twin_agrees() -> None:
    assert polling.FINAL_POST_STATUSES == v.FINAL_STATUSES
    assert {
        v.DraftStatus.READY,
        v.DraftStatus.FAILED,
        v.DraftStatus.DELETED,
    } == polling.FINAL_DRAFT_STATUSES


def test_proto_words_map_every_word_both_ways_and_refuse_a_word_without_a_value() -> None:
    """ProtoWords: the one mapping of a vocabulary to its proto enum (edge, publish-svc,
    render-svc)."""
    posts = v.ProtoWords.of(publish_pb2.PostStatus, "POST_STATUS", v.PostStatus)
    assert posts.pb["in-progress"] == publish_pb2.POST_STATUS_IN_PROGRESS
    assert {posts.word[posts.pb[w]] for w in v.PostStatus} == {w.value for w in v.PostStatus}
    drafts = v.ProtoWords.of(render_pb2.DraftStatus, "DRAFT_STATUS", v.DraftStatus)
    assert drafts.word[render_pb2.DRAFT_STATUS_READY] == "ready"
    with pytest.raises(ValueError):  # a word the proto does not name
        v.ProtoWords.of(render_pb2.DraftStatus, "DRAFT_STATUS", v.PostStatus)
