"""Shared personas: directory A (tenant acme) and directory B (tenant globex), with their clients."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import Client

from directories.models import Directory
from directories.services import directory_create
from tests.actors import TEST_ACTOR, scene_trail_forget

API_KEY = "test-env-api-key"
# `nodes`: two web servers on the test database (tests/webnodes.py).
pytest_plugins = ["tests.webnodes"]


@pytest.fixture(autouse=True)
def _in_process_drains_finish() -> Iterator[None]:
    """On PostgreSQL the tests commit for real, and a commit that records events kicks the in-process drain
    (no broker): its pool thread must be done before the test's database access ends, or it would reach a
    database the next test owns (or one pytest-django has closed). pytest-django's own autouse fixtures
    are set up before this one, so this wait runs before their teardown."""
    yield
    from webhooks.services import drain_pool

    drain_pool.drain(timeout=30)


@pytest.fixture(autouse=True)
def _endpoints_unknown_per_test() -> None:
    """The worker remembers when the first webhook endpoint was enabled (webhooks.services.fanout); each
    test starts with its own tables, so it starts without that memory."""
    from webhooks.services import fanout

    fanout.enabled_since_forget()


@pytest.fixture(autouse=True)
def _health_counters_per_test() -> Iterator[None]:
    """Each web process keeps SCIM health counters in memory until they are flushed
    (directories.activity.recorder): a test starts without another test's, which name its directories, and
    leaves none behind for the flush at exit, which runs after the test database is gone."""
    from directories.activity import recorder

    recorder.discard()
    yield
    recorder.discard()


@pytest.fixture(autouse=True)
def _rate_limits_per_test() -> Iterator[None]:
    """Each process keeps its rate-limit buckets in memory (core.ratelimit, memory:// in the suite): a test
    starts with full buckets, whatever the tests before it spent with the same API key."""
    from core import ratelimit

    ratelimit.reset()
    yield
    ratelimit.reset()


class LimiterClock:
    """The rate limiter's clock (core.ratelimit), stopped: the buckets refill only when a test moves it on
    (`advance`), so a test's requests, however slow the machine, find the budget it expects. `run()` lets it
    go (a test that really waits a Retry-After)."""

    # As on a machine up for eleven days: readings this large carry the rounding errors production's do.
    UPTIME = 1e6

    def __init__(self) -> None:
        self.now = time.monotonic() + self.UPTIME
        self.running = False

    def __call__(self) -> float:
        return time.monotonic() + self.UPTIME if self.running else self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def run(self) -> None:
        self.running = True


@pytest.fixture
def limiter_clock(monkeypatch: pytest.MonkeyPatch) -> LimiterClock:
    from core import ratelimit

    stopped = LimiterClock()
    monkeypatch.setattr(ratelimit, "_clock", stopped)
    return stopped


@pytest.fixture
def limit_store(settings) -> str:  # noqa: ANN001
    """The test broker's Redis (TEST_BROKER_URL) as the rate limits' store; under CI=true an unreachable one
    fails the test."""
    import redis

    url = settings.TEST_BROKER_URL
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.RedisError:
        if getattr(settings, "CI", False):
            pytest.fail(f"CI=true but the test Redis {url} is unreachable")
        pytest.skip(f"test Redis {url} unreachable (allowed outside CI)")
    settings.RATE_LIMIT_STORAGE_URL = url
    return url


@pytest.fixture
def api_client() -> Client:
    """A REST client carrying a valid API key."""
    return Client(HTTP_AUTHORIZATION=f"Bearer {API_KEY}")


@pytest.fixture
def directory_a(db) -> Directory:  # noqa: ANN001
    directory = directory_create(
        actor=TEST_ACTOR, data={"name": "Acme Okta", "tenant": "acme", "product": "crm", "type": "okta-scim-v2"}
    )
    scene_trail_forget()
    return directory


@pytest.fixture
def directory_b(db) -> Directory:  # noqa: ANN001
    directory = directory_create(
        actor=TEST_ACTOR, data={"name": "Globex Entra", "tenant": "globex", "product": "crm", "type": "azure-scim-v2"}
    )
    scene_trail_forget()
    return directory


@pytest.fixture
def scim_client_a(directory_a: Directory) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {directory_a.scim_secret}")


@pytest.fixture
def scim_client_b(directory_b: Directory) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {directory_b.scim_secret}")


# --- the production path under test -------------------------------------------------------------
# Production runs every SCIM and webhook request in autocommit (ATOMIC_REQUESTS is off), which is
# what switches on PostgreSQL's single-statement writes. pytest-django's default wraps each test in a
# transaction, where those writes switch off. So on PostgreSQL every test under these folders runs in
# transaction mode (`django_db(transaction=True)`: real commits, tables flushed after each test).
PRODUCTION_MODE_FOLDERS = ("scim", "webhooks", "faults", "history")


def _on_postgres() -> bool:
    from django.conf import settings

    return settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _on_postgres():
        return
    tests_root = Path(__file__).parent
    for item in items:
        try:
            folder = Path(str(item.path)).relative_to(tests_root).parts[0]
        except ValueError:
            continue
        if folder not in PRODUCTION_MODE_FOLDERS:
            continue
        marker = item.get_closest_marker("django_db")
        if marker is None and "db" not in getattr(item, "fixturenames", ()):
            continue  # a test that never touches the database stays as it is
        kwargs = dict(marker.kwargs) if marker is not None else {}
        kwargs["transaction"] = True
        item.add_marker(pytest.mark.django_db(*(marker.args if marker else ()), **kwargs), append=False)


# --- operations: what the console handler writes ---------------------------------------------------------


class ConsoleLog:
    """What Roster's console handler wrote during a test, in the format the test chose."""

    def __init__(self, stream: io.StringIO) -> None:
        self.stream = stream

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self) -> list[str]:
        return self.text.splitlines()

    def objects(self) -> list[dict]:
        """Every line as JSON (LOG_FORMAT=json): each must parse on its own."""
        return [json.loads(line) for line in self.lines()]


@pytest.fixture
def console_log() -> Iterator[Callable[[str], ConsoleLog]]:
    """`console_log("json")` (or "plain"): Roster's console handler (the LOGGING setting's `console`) writes
    into a buffer with that format, with the request-scope filter, until the test ends. Should an earlier
    test have replaced the root logger's handlers (an in-process Celery worker takes the root logger
    over), a handler like it stands in."""
    from core.logfilters import RequestScopeFields
    from core.logformat import JsonFormatter, PlainFormatter

    root = logging.getLogger()
    found = [h for h in root.handlers if isinstance(h, logging.StreamHandler) and h.get_name() == "console"]
    console = found[0] if found else logging.StreamHandler()
    if not found:
        root.addHandler(console)
    scope_filter = None
    if not any(isinstance(f, RequestScopeFields) for f in console.filters):
        scope_filter = RequestScopeFields()
        console.addFilter(scope_filter)
    saved_stream, saved_formatter, saved_level = console.stream, console.formatter, root.level
    root.setLevel(logging.INFO)

    def capture(log_format: str) -> ConsoleLog:
        stream = io.StringIO()
        console.setStream(stream)
        console.setFormatter(JsonFormatter() if log_format == "json" else PlainFormatter())
        return ConsoleLog(stream)

    yield capture
    console.setStream(saved_stream)
    console.setFormatter(saved_formatter)
    root.setLevel(saved_level)
    if scope_filter is not None:
        console.removeFilter(scope_filter)
    if not found:
        root.removeHandler(console)
