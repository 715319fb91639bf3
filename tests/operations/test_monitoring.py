"""docs/monitoring: the sample alert rules and Grafana dashboard read metrics that /metrics publishes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from webhooks.services import SWEEP, heartbeat_record

DOCS = Path(__file__).resolve().parents[2] / "docs" / "monitoring"
NAME = re.compile(r"\broster_[a-z_]+")


def _published(settings: Any) -> set[str]:
    settings.METRICS_TOKEN = "monitoring-token"
    heartbeat_record(name=SWEEP)
    text = Client(HTTP_AUTHORIZATION="Bearer monitoring-token").get("/metrics").content.decode()
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
        if family.type == "counter":
            names.add(family.name + "_total")
        if family.type == "histogram":
            names.update(family.name + suffix for suffix in ("_bucket", "_count", "_sum"))
    return names


def test_every_alert_rule_reads_a_published_metric(db: Any, settings: Any) -> None:
    rules = yaml.safe_load((DOCS / "alerts.yml").read_text())["groups"][0]["rules"]
    names = _published(settings)
    alerts = {rule["alert"] for rule in rules}
    assert {
        "RosterWebhookDeliveryFailureRatio",
        "RosterWebhookLagHigh",
        "RosterOutboxOldestPendingAge",
        "RosterScim5xx",
    } <= alerts
    for rule in rules:
        used = set(NAME.findall(rule["expr"]))
        assert used and used <= names, (rule["alert"], used - names)


def test_every_dashboard_panel_reads_a_published_metric(db: Any, settings: Any) -> None:
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    names = _published(settings)
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert len(exprs) >= 15
    for expr in exprs:
        used = set(NAME.findall(expr))
        assert used and used <= names, (expr, used - names)
