"""The alert rules evaluated the way Prometheus evaluates them: `promtool test rules` (Debian's
`prometheus` package) on the PrometheusRule of the rendered prod overlay, with series that
must raise each alert and series that must not (a single failed call, a short blip)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.support import of_kind, render

COMPONENTS = ("edge", "account-svc", "render-svc", "publish-svc", "webhook-svc")
DOWN = {
    "edge": "EdgeDown",
    "account-svc": "AccountDown",
    "render-svc": "RenderDown",
    "publish-svc": "PublishDown",
    "webhook-svc": "WebhookDown",
}


@dataclass(frozen=True)
class Case:
    """Series over time (one sample a minute), and at `at` whether `alert` fires (with
    `labels` beside its severity) or not."""

    name: str
    alert: str
    series: dict[str, str]
    at: str
    fires: bool
    labels: dict[str, str] = field(default_factory=dict)


def up(component: str, values: str, instance: str = "a") -> dict[str, str]:
    return {f'up{{job="storypost-{component}",instance="{instance}"}}': values}


def healthy(*but: str) -> dict[str, str]:
    """Every component up for 20 minutes, but those named."""
    series: dict[str, str] = {}
    for component in COMPONENTS:
        if component not in but:
            series |= up(component, "1x20")
    return series


def down_cases() -> list[Case]:
    cases: list[Case] = []
    for component, alert in DOWN.items():
        cases += [
            Case(f"{component} up", alert, healthy(), "15m", fires=False),
            # Its last replica stops answering at minute 2: the alert after its `for:`.
            Case(
                f"{component} stopped",
                alert,
                healthy(component) | up(component, "1 1 0x18"),
                "10m",
                fires=True,
            ),
            # A blip of one scrape is not an outage.
            Case(
                f"{component} blip",
                alert,
                healthy(component) | up(component, "1 1 0 1x17"),
                "10m",
                fires=False,
            ),
            # One replica of two down: still served.
            Case(
                f"{component} one replica down",
                alert,
                healthy(component) | up(component, "1x20") | up(component, "0x20", "b"),
                "10m",
                fires=False,
            ),
            # Not scraped at all (scaled to zero, or no target): absent.
            Case(
                f"{component} absent",
                alert,
                healthy(component),
                "10m",
                fires=True,
                labels={"job": f"storypost-{component}"},
            ),
        ]
    return cases


ACCOUNT_CALLS = (
    'storypost_grpc_requests_total{job="storypost-account-svc",'
    'method="/storypost.account.v1.AccountService/ValidateApiKey",code="%s"}'
)
EDGE_CALLS = 'storypost_edge_requests_total{procedure="generate-uuid",status="%s"}'


def gauge(name: str, values: str, **labels: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {f"{name}{{{inner}}}": values}


CASES: list[Case] = [
    *down_cases(),
    # One UNAVAILABLE among thousands of answers pages nobody; a tenth of them does.
    Case(
        "one unavailable answer",
        "AccountUnavailable",
        {ACCOUNT_CALLS % "OK": "0+600x20", ACCOUNT_CALLS % "UNAVAILABLE": "0 0 0 1x17"},
        "15m",
        fires=False,
    ),
    Case(
        "a tenth unavailable",
        "AccountUnavailable",
        {ACCOUNT_CALLS % "OK": "0+540x20", ACCOUNT_CALLS % "UNAVAILABLE": "0+60x20"},
        "15m",
        fires=True,
    ),
    Case(
        "1% of 5xx",
        "EdgeErrors",
        {EDGE_CALLS % "200": "0+990x30", EDGE_CALLS % "503": "0+10x30"},
        "25m",
        fires=False,
    ),
    Case(
        "10% of 5xx",
        "EdgeErrors",
        {EDGE_CALLS % "200": "0+900x30", EDGE_CALLS % "503": "0+100x30"},
        "25m",
        fires=True,
    ),
    Case(
        "a due post waits 10 minutes",
        "PostsBacklog",
        gauge("storypost_backlog_oldest_seconds", "0+60x20", backlog="posts_due"),
        "15m",
        fires=True,
    ),
    Case(
        "due posts taken within a minute",
        "PostsBacklog",
        gauge("storypost_backlog_oldest_seconds", "20 50 10 0x17", backlog="posts_due"),
        "15m",
        fires=False,
    ),
    Case(
        "a delivery waits",
        "WebhookBacklog",
        gauge("storypost_backlog_oldest_seconds", "0+30x30", backlog="webhook_deliveries_due"),
        "25m",
        fires=True,
    ),
    Case(
        "deliveries taken at once",
        "WebhookBacklog",
        gauge("storypost_backlog_oldest_seconds", "1x30", backlog="webhook_deliveries_due"),
        "25m",
        fires=False,
    ),
    Case(
        "renders queue for slots",
        "RenderSaturated",
        gauge("storypost_render_slots", "3x30", state="waiting"),
        "25m",
        fires=True,
    ),
    Case(
        "a short queue",
        "RenderSaturated",
        gauge("storypost_render_slots", "3 3 0x28", state="waiting"),
        "25m",
        fires=False,
    ),
    Case(
        "events wait for NATS",
        "EventsStuck",
        gauge("storypost_outbox_oldest_event_age_seconds", "0+60x20", collection="posts"),
        "15m",
        fires=True,
    ),
]


@pytest.fixture(scope="module")
def rules() -> dict[str, Any]:
    """The rendered PrometheusRule's groups, as a Prometheus rule file."""
    (rule,) = of_kind(render("overlays/prod"), "PrometheusRule").values()
    return {"groups": rule["spec"]["groups"]}


def test_promtool_reads_the_rules(rules: dict[str, Any], tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool: Debian's prometheus package (scripts/ensure-apt.sh installs it)"
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rules))
    checked = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_each_alert_fires_when_it_must_and_only_then(rules: dict[str, Any], tmp_path: Path) -> None:
    by_name = {r["alert"]: r for group in rules["groups"] for r in group["rules"]}
    tested = {case.alert for case in CASES}
    # Every alert of the storypost components' own metrics is tested here.
    assert tested >= set(DOWN.values()) | {"AccountUnavailable", "PostsBacklog", "EdgeErrors"}
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules))
    tests = [_promtool_test(case, by_name[case.alert]) for case in CASES]
    spec = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(spec, width=1000))
    promtool = shutil.which("promtool")
    assert promtool
    ran = subprocess.run(
        [promtool, "test", "rules", "tests.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-3000:]


def _promtool_test(case: Case, rule: dict[str, Any]) -> dict[str, Any]:
    expected = (
        [
            {
                "exp_labels": {**case.labels, **rule["labels"]},
                "exp_annotations": rule["annotations"],
            }
        ]
        if case.fires
        else []
    )
    return {
        "name": case.name,
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in case.series.items()],
        "alert_rule_test": [
            {"eval_time": case.at, "alertname": case.alert, "exp_alerts": expected}
        ],
    }
