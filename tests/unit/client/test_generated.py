"""The SDK's generated code matches the procedure catalog, so the two cannot drift apart."""

from __future__ import annotations

import inspect
import keyword
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from edge.catalog import Procedure, build_catalog
from storypost_client import KINDS, PROCEDURES, AsyncStorypostClient, StorypostClient
from storypost_client.generated import types

ROOT = Path(__file__).resolve().parents[3]
CATALOG = build_catalog()


def test_committed_generated_code_equals_a_fresh_generation() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_client.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_call_facts_match_the_catalog() -> None:
    assert list(PROCEDURES) == list(CATALOG.names())
    assert len(PROCEDURES) == len(CATALOG)
    for procedure in CATALOG:
        info = PROCEDURES[procedure.name]
        assert info.idempotent == procedure.idempotent
        assert info.client_timeout_seconds == procedure.client_timeout_seconds
        assert info.render_input == procedure.render_input
        assert info.summary == procedure.summary


def snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).replace("-", "_")


def arg(key: str) -> str:
    """A JSON key's method argument: snake case, a Python keyword with `_` (`from_`)."""
    name = snake(key)
    return f"{name}_" if keyword.iskeyword(name) else name


@pytest.mark.parametrize("client_class", [StorypostClient, AsyncStorypostClient])
@pytest.mark.parametrize("procedure", CATALOG.procedures, ids=lambda p: p.name)
def test_one_method_per_procedure_with_the_catalog_params(
    client_class: type, procedure: Procedure
) -> None:
    method = getattr(client_class, snake(procedure.name))
    assert inspect.iscoroutinefunction(method) == (client_class is AsyncStorypostClient)
    params = inspect.signature(method).parameters
    schema = procedure.input_schema
    properties = schema.get("properties", {})
    assert set(params) == {"self", "timeout"} | {arg(key) for key in properties}
    creating = procedure.name.startswith(("create-", "schedule-", "upload-"))
    for key in properties:
        param = params[arg(key)]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY
        required = key in schema.get("required", ())
        # Required params have no default, except the UUID of a resource being created.
        auto_uuid = creating and required and properties[key].get("format") == "uuid"
        assert (param.default is inspect.Parameter.empty) == (required and not auto_uuid), key


@pytest.mark.parametrize("procedure", CATALOG.procedures, ids=lambda p: p.name)
def test_types_follow_the_schemas(procedure: Procedure) -> None:
    prefix = "".join(part.capitalize() for part in procedure.name.split("-"))
    request = getattr(types, f"{prefix}Request")
    response = getattr(types, f"{prefix}Response")
    for typed, schema in ((request, procedure.input_schema), (response, procedure.output_schema)):
        properties = set(schema.get("properties", {}))
        assert set(typing.get_type_hints(typed)) == properties
        assert typed.__required_keys__ == set(schema.get("required", ()))


def test_final_states_of_the_wait_helpers_are_states_of_the_catalog() -> None:
    for kind in KINDS.values():
        procedure = CATALOG.get(kind.status_procedure)
        assert procedure is not None
        states = set(procedure.output_schema["properties"]["status"]["enum"])
        assert kind.final_states < states
        assert kind.success_state in kind.final_states
        assert procedure.input_schema["required"] == [kind.uuid_field]
