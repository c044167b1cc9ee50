"""The monitoring component: its PrometheusRule carries exactly the alerts docs/operations.md
describes, with their severity, on metrics the code really exports, jobs the PodMonitor
really produces and gRPC methods that exist."""

from __future__ import annotations

import ast
import re
from functools import cache
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from tests.deploy.support import ROOT, of_kind, render

OPERATIONS = ROOT / "docs" / "operations.md"
# Packages whose metrics a storypost pod serves.
SOURCES = ("runtime", "edge", "account-svc", "render-svc", "publish-svc", "webhook-svc")
# What prometheus_client exports for each kind of metric named N.
SERIES = {
    "Counter": ("_total", "_created"),
    "Histogram": ("_bucket", "_sum", "_count", "_created"),
    "Gauge": ("",),
    "Summary": ("", "_sum", "_count", "_created"),
}
# Series that come from Prometheus itself (`up`) and kube-state-metrics (`kube_*`).
EXTERNAL_SERIES = re.compile(r"^(up|kube_[a-z0-9_]+)$")
PROMQL_WORDS = {
    "sum", "max", "min", "avg", "count", "rate", "increase", "irate", "histogram_quantile",
    "absent", "vector", "or", "and", "unless", "by", "without", "on", "ignoring",
}  # fmt: skip


@pytest.fixture(scope="module")
def prod() -> list[dict[str, Any]]:
    return render("overlays/prod")


def documented_alerts() -> dict[str, str]:
    """Alert name → severity ("page"/"ticket") from the tables of "Alerts that matter"."""
    text = OPERATIONS.read_text().split("## Alerts that matter", 1)[1].split("\n## ", 1)[0]
    found: dict[str, str] = {}
    severity = ""
    for line in text.splitlines():
        if line.startswith("**") and line.endswith("**"):
            severity = line.strip("*").lower()
        cell = re.match(r"^\| ([A-Z][A-Za-z]+) \|", line)
        if cell:
            found[cell.group(1)] = severity
    return found


@cache
def exported_series() -> frozenset[str]:
    """Every series name the code registers: the first argument of prometheus_client's
    constructors and of `storypost_runtime.metrics.MetricsIn`'s `counter`/`gauge`/`histogram`."""
    names: set[str] = set()
    for source in SOURCES:
        for path in (ROOT / source).rglob("*.py"):
            if "_pb2" in path.name:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and node.args):
                    continue
                called = getattr(node.func, "id", getattr(node.func, "attr", None))
                kind = called.capitalize() if isinstance(called, str) else None
                first = node.args[0]
                if (
                    kind in SERIES
                    and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)
                ):
                    base = first.value.removesuffix("_total")
                    names |= {f"{base}{suffix}" for suffix in SERIES[kind]}
    return frozenset(names)


def metric_names(expr: str) -> set[str]:
    """The series an expression reads: identifiers outside strings, label sets, ranges,
    `by (...)` groupings and the function/operator words."""
    bare = re.sub(r'"[^"]*"', "", expr)
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", bare)
    bare = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", bare)
    words = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", bare))
    return words - PROMQL_WORDS


@cache
def grpc_methods() -> frozenset[str]:
    """`/package.Service/Method` of every service in protos/ (what the interceptor labels)."""
    import importlib

    methods: set[str] = set()
    for proto in (ROOT / "protos" / "storypost").glob("*/v1/*_pb2.py"):
        module = importlib.import_module(f"storypost.{proto.parent.parent.name}.v1.{proto.stem}")
        for service in module.DESCRIPTOR.services_by_name.values():
            methods |= {f"/{service.full_name}/{m.name}" for m in service.methods}
    return frozenset(methods)


def rules(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    (rule,) = of_kind(docs, "PrometheusRule").values()
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def test_the_alerts_are_those_of_the_operations_guide(prod: list[dict[str, Any]]) -> None:
    documented = documented_alerts()
    assert len(documented) >= 10, documented
    written = {r["alert"]: r["labels"]["severity"] for r in rules(prod)}
    assert written == documented


def test_every_expression_reads_series_the_code_exports(prod: list[dict[str, Any]]) -> None:
    exported = exported_series()
    assert {"storypost_grpc_requests_total", "storypost_edge_request_seconds_bucket"} <= exported
    for rule in rules(prod):
        for name in metric_names(rule["expr"]):
            assert name in exported or EXTERNAL_SERIES.match(name), (rule["alert"], name)


def test_jobs_namespaces_and_methods_in_expressions_exist(prod: list[dict[str, Any]]) -> None:
    deployments = set(of_kind(prod, "Deployment"))
    namespace = next(iter(of_kind(prod, "Deployment").values()))["metadata"]["namespace"]
    (monitor,) = of_kind(prod, "PodMonitor").values()
    (relabel,) = [
        r for e in monitor["spec"]["podMetricsEndpoints"] for r in e["relabelings"]
        if r["targetLabel"] == "job"
    ]  # fmt: skip
    assert relabel["sourceLabels"] == ["__meta_kubernetes_pod_label_app_kubernetes_io_name"]
    jobs = {relabel["replacement"].replace("$1", name) for name in deployments}
    methods = grpc_methods()
    for rule in rules(prod):
        expr = rule["expr"]
        for job in re.findall(r'job="([^"]+)"', expr):
            assert job in jobs, (rule["alert"], job)
        for value in re.findall(r'namespace="([^"]+)"', expr):
            assert value == namespace, (rule["alert"], value)
        for op, value in re.findall(r'method(=~|=)"([^"]+)"', expr):
            pattern = re.compile(value if op == "=~" else re.escape(value))
            assert any(pattern.fullmatch(m) for m in methods), (rule["alert"], value)
        assert rule["labels"]["severity"] in {"page", "ticket"}
        assert rule["annotations"]["summary"], rule["alert"]


def test_every_alert_links_its_runbook_section(prod: list[dict[str, Any]]) -> None:
    headings = set(re.findall(r"^#### ([A-Za-z]+)$", OPERATIONS.read_text(), re.MULTILINE))
    for rule in rules(prod):
        url = rule["annotations"]["runbook_url"]
        assert url.startswith("https://"), (rule["alert"], url)
        fragment = url.rsplit("#", 1)[1]
        # GitHub and most renderers make a heading's anchor of its lower-cased words.
        assert fragment == rule["alert"].lower() and rule["alert"] in headings, rule["alert"]


def test_every_component_has_an_availability_alert(prod: list[dict[str, Any]]) -> None:
    exprs = [rule["expr"] for rule in rules(prod)]
    for name in of_kind(prod, "Deployment"):
        job = f'job="storypost-{name}"'
        down = [e for e in exprs if f"up{{{job}}}" in e and f"absent(up{{{job}}})" in e]
        assert down, f"no alert says {name} is down"


def test_monitoring_objects_have_the_operator_shape(prod: list[dict[str, Any]]) -> None:
    # kubernetes-validate has no schema for the Operator's CRDs: check what it needs here.
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        kubernetes_validate.validate(of_kind(prod, "PodMonitor")["storypost"], "1.32.0")
    (monitor,) = of_kind(prod, "PodMonitor").values()
    assert set(monitor["spec"]) == {"selector", "podMetricsEndpoints"}
    for endpoint in monitor["spec"]["podMetricsEndpoints"]:
        assert endpoint["path"] == "/metrics" and endpoint["port"]
    for rule in rules(prod):
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}
        if "for" in rule:
            assert re.fullmatch(r"\d+[smh]", rule["for"]), rule


def test_the_hpas_scale_on_metrics_the_adapter_serves_from_exported_series(
    prod: list[dict[str, Any]],
) -> None:
    import yaml

    adapter = yaml.safe_load(
        of_kind(prod, "ConfigMap")["storypost-adapter-rules"]["data"]["config.yaml"]
    )
    served: dict[str, str] = {}
    for rule in adapter["rules"] + adapter["externalRules"]:
        series = re.match(r"^([a-z_]+)\{", rule["seriesQuery"])
        assert series, rule
        served[rule["name"]["as"]] = series.group(1)
        assert re.fullmatch(rule["name"]["matches"].strip("^$"), series.group(1))
    exported = exported_series()
    hpas = of_kind(prod, "HorizontalPodAutoscaler")
    for name in ("render-svc", "publish-svc"):
        metrics = hpas[name]["spec"]["metrics"]
        kinds = {m["type"] for m in metrics}
        # Scaled on what limits it, with CPU as the fallback.
        assert "Resource" in kinds and kinds & {"Pods", "External"}, name
        for metric in metrics:
            if metric["type"] in ("Pods", "External"):
                wanted = metric[metric["type"].lower()]["metric"]["name"]
                assert wanted in served, (name, wanted)
                assert served[wanted] in exported, (name, served[wanted])
