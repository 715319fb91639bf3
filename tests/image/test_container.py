"""The container image, built from the Dockerfile on a Debian base made from Debian's packages and run for
real by scripts/container-test.sh (what it checks is listed at its top).

It takes one to two minutes with the base and the layers cached, five to six from nothing, so it runs in
CI (CI=true), where it fails when podman cannot be had, and locally only when asked:
`ROSTER_CONTAINER_TEST=1 .venv/bin/python -m pytest tests/image`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(1800)
def test_the_image_builds_runs_read_only_and_serves_scim_webhooks_and_the_feed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    if os.environ.get("CI") != "true" and os.environ.get("ROSTER_CONTAINER_TEST") != "1":
        pytest.skip("builds and runs the image (minutes): set ROSTER_CONTAINER_TEST=1 (CI=true runs it)")
    output: list[str] = []
    with subprocess.Popen(
        ["bash", "scripts/container-test.sh"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as script:
        assert script.stdout is not None
        for line in script.stdout:
            output.append(line)
            if line.startswith("container test:"):
                with capsys.disabled():  # its progress and timings in the run's log
                    print(line, end="", flush=True)
    assert script.returncode == 0, "".join(output[-120:])
