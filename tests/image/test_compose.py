"""compose.yaml and .env.example: the one-machine production shape, checked as a file (the image itself is run
by test_container.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from server.container import PROCESSES

ROOT = Path(__file__).resolve().parents[2]
ROSTER = ("migrate", "web", "worker", "beat")


@pytest.fixture(scope="module")
def services() -> dict[str, dict]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]


def test_compose_runs_postgresql_redis_and_each_roster_process_by_its_entry_point_name(services: dict) -> None:
    assert set(services) == {"postgres", "redis", *ROSTER}
    for name in ROSTER:
        assert services[name]["command"][0] in PROCESSES and services[name]["command"][0] == name


def test_the_other_images_are_pinned_to_a_version(services: dict) -> None:
    for name in ("postgres", "redis"):
        assert re.fullmatch(rf"{name}:\d+\.\d+(\.\d+)?-[a-z]+", services[name]["image"]), services[name]["image"]


def test_migrate_builds_the_image_once_and_runs_before_the_others_once_postgresql_is_healthy(services: dict) -> None:
    migrate = services["migrate"]
    assert migrate["build"] == "." and migrate["restart"] == "no"
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    for name in ("web", "worker", "beat"):
        assert "build" not in services[name] and services[name]["image"] == migrate["image"]
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
        assert services[name]["depends_on"]["redis"] == {"condition": "service_healthy"}
    assert services["postgres"]["healthcheck"] and services["redis"]["healthcheck"]


def test_roster_runs_read_only_with_only_tmp_writable_and_the_web_server_on_8000(services: dict) -> None:
    for name in ROSTER:
        assert services[name]["read_only"] is True and services[name]["tmpfs"] == ["/tmp"]
        assert services[name]["cap_drop"] == ["ALL"]
    assert [port.rsplit(":", 1)[1] for port in services["web"]["ports"]] == ["8000"]


def test_compose_starts_without_a_env_file_and_takes_every_setting_from_one_when_there_is(services: dict) -> None:
    for name in ROSTER:
        assert services[name]["env_file"] == [{"path": ".env", "required": False}]
        # Each default can be replaced from .env, which Compose also reads for ${...}.
        for variable, value in services[name]["environment"].items():
            assert value.startswith(f"${{{variable}:-"), variable


def test_every_variable_of_the_env_example_is_one_roster_or_compose_reads() -> None:
    names = re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), flags=re.M)
    assert {"SECRET_KEY", "DB_ENCRYPTION_KEY", "POSTGRES_PASSWORD"} <= set(names)
    readers = "".join((ROOT / path).read_text() for path in ("config/settings.py", "server/container.py"))
    readers += (ROOT / "compose.yaml").read_text()
    for name in names:
        assert f'"{name}"' in readers or f"${{{name}" in readers, name
