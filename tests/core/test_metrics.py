"""core.metrics and core.metricsdir: what is counted, and one node's processes adding up in one scrape."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from core import metrics, metricsdir

ROOT = Path(__file__).resolve().parents[2]


def samples(exposition: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(exposition.decode())
        for s in family.samples
    }


def _process(folder: Path, code: str) -> None:
    """A separate Python process writing its metrics under `folder`, as a web or Celery worker does."""
    env = {**os.environ, metricsdir.MULTIPROC_ENV: str(folder), "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    script = "import django; django.setup()\nfrom django.conf import settings\nsettings.METRICS_TOKEN = 't'\n"
    script += "from core import metrics\n" + textwrap.dedent(code)
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=60)


def test_the_processes_of_a_node_add_up_in_one_scrape(tmp_path: Path) -> None:
    web = metricsdir.web_prepare(tmp_path)
    worker = metricsdir.worker_prepare(tmp_path, 4242)
    scim = (
        "metrics.scim_request(directory_type='okta-scim-v2', method='POST', resource='users', status=201, "
        "seconds=0.004)"
    )
    for _ in range(2):  # two web workers (two pids) in web/
        _process(web, f"for _ in range(3): {scim}\n")
    _process(worker, "metrics.delivery_attempted(delivered=True, error_class='', seconds=0.02, lag=0.3)\n")
    got = samples(metrics.exposition(base=tmp_path))
    key = (("directory_type", "okta-scim-v2"), ("method", "POST"), ("resource", "users"), ("status_class", "2xx"))
    assert got[("roster_scim_requests_total", key)] == 6.0
    assert got[("roster_webhook_deliveries_total", (("error_class", ""), ("outcome", "delivered")))] == 1.0
    assert got[("roster_webhook_lag_seconds_count", ())] == 1.0
    assert got[("roster_build_info", tuple(sorted(metrics.build_labels().items())))] == 1.0


def test_a_web_restart_starts_from_zero_and_drops_the_folders_of_workers_that_are_gone(tmp_path: Path) -> None:
    web = metricsdir.web_prepare(tmp_path)
    (web / "counter_1.db").write_bytes(b"")
    gone = metricsdir.worker_prepare(tmp_path, 2**22 + 12345)  # no such process
    alive = metricsdir.worker_prepare(tmp_path, os.getpid())
    metricsdir.web_prepare(tmp_path)
    assert list(web.iterdir()) == [] and not gone.exists() and alive.exists()


def test_nothing_is_counted_while_metrics_token_is_unset(settings) -> None:  # noqa: ANN001
    settings.METRICS_TOKEN = "t"
    key = ("roster_admin_login_failures_total", ())
    before = samples(metrics.exposition())[key]
    settings.METRICS_TOKEN = None
    metrics.login_failure()
    settings.METRICS_TOKEN = "t"
    assert samples(metrics.exposition())[key] == before
    metrics.login_failure()
    assert samples(metrics.exposition())[key] == before + 1
