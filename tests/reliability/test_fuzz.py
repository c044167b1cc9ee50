"""Issue #12 item 4: fuzzing every procedure from our own OpenAPI document (schemathesis on
top of hypothesis), valid and invalid inputs, plus hand-made hostile bodies. Zero 5xx; every
4xx is JSON with `errorMessage`; every 2xx validates against the catalog's output schema
(formats enforced).

`make test` runs a few examples per procedure and mode (STORYPOST_FUZZ_EXAMPLES, 6);
`make reliability` runs STORYPOST_FUZZ_LONG_EXAMPLES (150) per procedure and mode.
Examples steered to a connected account take it from a pool sized so that no account meets a
daily limit (tests/support/accounts_pool.py, issue #56). Hypothesis's seed:
STORYPOST_FUZZ_SEED or STORYPOST_RELIABILITY_SEED (figures).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from schemathesis import GenerationMode

from edge.catalog import build_catalog
from edge.validation import FORMAT_CHECKER
from storypost.testing.stack import StackHandle
from tests.reliability.support import FIGURES, long_run, run_seed, username
from tests.support.accounts_pool import (
    CLIPAPP_POST,
    REEL,
    SOCIAL_POST,
    STORY,
    AccountPool,
    connected_pool,
)
from tests.support.api import Api, Org

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("STORYPOST_FUZZ_EXAMPLES", "6"))
LONG_EXAMPLES = int(os.environ.get("STORYPOST_FUZZ_LONG_EXAMPLES", "150"))
CATALOG = build_catalog()
PROCEDURES = [procedure.name for procedure in CATALOG.procedures]
# Fields a valid call needs a real value in to get past the account lookup; half of the
# examples get the organization's connected accounts there, to reach the renderer.
ACCOUNT_FIELDS = ("photoappUsername", "clipappAccountId", "socialAccountId")
# The procedures that post to the account they name (the pools count these).
POSTING = {STORY, REEL, CLIPAPP_POST, SOCIAL_POST}
# The calls of each procedure this run makes (both modes), the long ones included when asked.
CALLS = 2 * (EXAMPLES + (LONG_EXAMPLES if long_run() else 0))


@dataclass
class Findings:
    """Every answer that breaks a rule (collected, not raised: no shrinking, each example
    runs once) and what was seen."""

    problems: list[str] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    calls: int = 0

    def check(self, procedure: str, sent: object, answer: httpx.Response) -> None:
        self.calls += 1
        self.statuses[answer.status_code] = self.statuses.get(answer.status_code, 0) + 1
        shown = json.dumps(sent, default=repr)[:300]
        if answer.status_code >= 500:
            self.problems.append(f"{procedure}: HTTP {answer.status_code} for {shown}")
            return
        try:
            body = answer.json()
        except ValueError:
            self.problems.append(f"{procedure}: not JSON ({answer.status_code}) for {shown}")
            return
        if answer.status_code >= 400:
            if not (isinstance(body, dict) and isinstance(body.get("errorMessage"), str)):
                self.problems.append(f"{procedure}: {answer.status_code} without errorMessage")
            elif not body["errorMessage"]:
                self.problems.append(f"{procedure}: empty errorMessage for {shown}")
            return
        found = CATALOG.get(procedure)
        assert found is not None
        validator = Draft202012Validator(found.output_schema, format_checker=FORMAT_CHECKER)
        errors = [e.message for e in validator.iter_errors(body)]
        if errors:
            self.problems.append(f"{procedure}: 2xx breaks its output schema: {errors[:3]}")


@dataclass(frozen=True)
class Target:
    org: Org
    pools: dict[str, AccountPool]  # account field -> the organization's accounts for it
    seed: int

    def take(self, field_name: str, procedure: str) -> str | None:
        """An account for one steered example (None: every one is at a limit; the example
        keeps its fuzzed value). A procedure that posts nothing (a listing filtered by
        account) gets the first account, uncounted."""
        pool = self.pools[field_name]
        if procedure not in POSTING:
            return pool.accounts[0]
        return pool.take(procedure)


@pytest.fixture(scope="module")
async def target(rel_stack: StackHandle, rel_api: Api) -> Target:
    org = await rel_api.admin.create_org("fuzzed org")
    # About half the examples are steered to an account; refused ones give theirs back.
    steered = CALLS // 2 + 1
    photoapp = await connected_pool(
        rel_stack, org, "photoapp", {STORY: steered, REEL: steered}, name=username
    )
    clipapp = await connected_pool(rel_stack, org, "clipapp", {CLIPAPP_POST: steered},
                                   name=username)  # fmt: skip
    social = await connected_pool(
        rel_stack, org, "linknet", {SOCIAL_POST: steered}, name=username, connection="social"
    )
    FIGURES["fuzz: accounts"] = (
        f"{len(photoapp.accounts)} photoapp, {len(clipapp.accounts)} clipapp, "
        f"{len(social.accounts)} linknet for {CALLS} calls per procedure"
    )
    pools = {"photoappUsername": photoapp, "clipappAccountId": clipapp, "socialAccountId": social}
    return Target(org, pools, run_seed("fuzz"))


@pytest.fixture(scope="module")
async def openapi(rel_api: Api) -> Any:
    """The schema schemathesis generates from: our own served OpenAPI document."""
    answer = await rel_api.get("/api/v1/openapi.json")
    assert answer.status_code == 200
    return schemathesis.openapi.from_dict(answer.json())


def fuzz(
    openapi: Any, target: Target, procedure: str, examples: int, findings: Findings
) -> Callable[[], None]:
    """A hypothesis run over one procedure, both modes, calling the edge synchronously."""
    path = f"/o/{{organizationId}}/api/v1/{procedure}"
    operation = openapi[path]["POST"]
    url = f"{target.org.base_url}/{procedure}"
    headers = {"Authorization": f"Bearer {target.org.token}"}
    cases = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )
    client = httpx.Client(timeout=130.0)

    @seed(target.seed)
    @settings(
        max_examples=examples * 2,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=False,
    )
    @given(case=cases, use_accounts=st.booleans())
    def run(case: Any, use_accounts: bool) -> None:
        body = case.body
        taken: tuple[str, str] | None = None  # (account field, account) counted for a post
        if use_accounts and isinstance(body, dict):
            # Steered towards calls that get through: a real account, one design input, no
            # date (posted at once), so the renderer and the publisher see fuzzed designs.
            for name in ACCOUNT_FIELDS:
                account = target.take(name, procedure) if name in body else None
                if account is not None:
                    body[name] = account
                    taken = (name, account)
            if "html" in body and "url" in body:
                del body["url"]
            body.pop("date", None)
        extra = {}
        request_id = (case.headers or {}).get("X-Request-Id")
        if isinstance(request_id, str) and request_id.isascii():
            extra["X-Request-Id"] = request_id
        if body is None or type(body).__name__ == "NotSet":
            answer = client.post(url, headers={**headers, **extra})
        elif isinstance(body, bytes | str):  # a raw body the negative mode made up
            raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
            answer = client.post(
                url, headers={**headers, **extra, "Content-Type": "application/json"}, content=raw
            )
        else:
            answer = client.post(url, headers={**headers, **extra}, json=body)
        if taken is not None and procedure in POSTING and 400 <= answer.status_code < 500:
            target.pools[taken[0]].give_back(taken[1], procedure)  # refused: nothing posted
        findings.check(procedure, body, answer)

    def go() -> None:
        try:
            run()
        finally:
            client.close()

    return go


async def run_fuzz(openapi: Any, target: Target, procedure: str, examples: int) -> Findings:
    findings = Findings()
    started = time.monotonic()
    await asyncio.to_thread(fuzz(openapi, target, procedure, examples, findings))
    FIGURES[f"fuzz {examples}x2: {procedure}"] = (
        f"{findings.calls} calls in {time.monotonic() - started:.0f} s, "
        f"statuses {dict(sorted(findings.statuses.items()))}"
    )
    FIGURES["fuzz: posts per account"] = "; ".join(
        pool.describe() for pool in target.pools.values()
    )
    return findings


@pytest.mark.parametrize("procedure", PROCEDURES)
async def test_fuzzed_calls_never_break_the_contract(
    openapi: Any, target: Target, procedure: str
) -> None:
    findings = await run_fuzz(openapi, target, procedure, EXAMPLES)
    assert findings.calls >= EXAMPLES
    assert findings.problems == []


@pytest.mark.reliability_long
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("procedure", PROCEDURES)
async def test_long_fuzzing_never_breaks_the_contract(
    openapi: Any, target: Target, procedure: str
) -> None:
    findings = await run_fuzz(openapi, target, procedure, LONG_EXAMPLES)
    assert findings.problems == []


RAW_BODIES: list[tuple[str, bytes, str]] = [
    ("empty", b"", "application/json"),
    ("not JSON", b"{not json", "application/json"),
    ("invalid UTF-8", b'{"draftUuid": "\xff\xfe"}', "application/json"),
    ("a string", b'"hello"', "application/json"),
    ("null", b"null", "application/json"),
    ("a huge number", b'{"contentLengthBytes": 1e400}', "application/json"),
    ("a huge integer", b'{"contentLengthBytes": ' + b"9" * 5000 + b"}", "application/json"),
    ("NaN", b'{"videoCoverTimestampMs": NaN}', "application/json"),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, "application/json"),
    ("deep object", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "application/json"),
    ("duplicate keys", b'{"draftUuid": "x", "draftUuid": "y"}', "application/json"),
    ("lone surrogate", b'{"html": "\\ud800"}', "application/json"),
    ("NUL in a key", b'{"\\u0000": 1}', "application/json"),
    ("form", b"a=b", "application/x-www-form-urlencoded"),
    ("text", b"{}", "text/plain"),
    ("odd charset", b"{}", "application/json; charset=utf-16"),
    ("BOM", b"\xef\xbb\xbf{}", "application/json"),
]


@pytest.mark.parametrize("procedure", ["create-draft", "schedule-photoapp-story", "generate-uuid"])
async def test_hostile_raw_bodies_get_clear_4xx(
    rel_api: Api, target: Target, procedure: str
) -> None:
    findings = Findings()
    for name, raw, content_type in RAW_BODIES:
        answer = await rel_api.post(
            f"{target.org.base_url}/{procedure}",
            content=raw,
            headers={**rel_api.auth(target.org), "Content-Type": content_type},
        )
        findings.check(procedure, name, answer)
        assert answer.status_code < 500, (name, answer.status_code, answer.text[:200])
    assert findings.problems == []
