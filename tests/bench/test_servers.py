"""bench.servers: the web servers get the same processes and threads, and the documented one is started
exactly as bench.compare starts Roster."""

from __future__ import annotations

from pathlib import Path

from bench import servers, systems
from bench.stats import PhaseResult
from bench.workload import write_p99_ms


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_the_servers_run_the_same_workers_and_web_is_the_documented_command() -> None:
    bin_dir = Path("/venv/bin")
    documented = servers.web_command("web", bin_dir=bin_dir, port=9000, workers=3, threads=2)
    plain = servers.web_command("granian", bin_dir=bin_dir, port=9001, workers=3, threads=2)
    gthread = servers.web_command("gthread", bin_dir=bin_dir, port=9002, workers=3, threads=2)
    assert documented == systems.web_command(systems.RosterOptions(port=9000, web_workers=3, bin_dir=bin_dir))
    assert plain[0] == "/venv/bin/granian" and _flag(plain, "--interface") == "wsgi"
    assert (_flag(plain, "--workers"), _flag(plain, "--port")) == ("3", "9001")
    assert _flag(plain, "--blocking-threads") == "2" and plain.count("--blocking-threads") == 1
    assert gthread[0] == "/venv/bin/gunicorn" and _flag(gthread, "--worker-class") == "gthread"
    assert (_flag(gthread, "--workers"), _flag(gthread, "--threads")) == ("3", "2")
    assert _flag(gthread, "--bind") == "127.0.0.1:9002"
    assert plain[-1] == gthread[-1] == "config.wsgi:application"


def test_the_write_p99_pools_the_requests_of_every_write_phase_and_only_those() -> None:
    writes = PhaseResult("create_users", 8, latencies=[0.001] * 98 + [0.5, 0.5])
    reads = PhaseResult("filter_username", 8, latencies=[9.0] * 100)
    deletes = PhaseResult("delete", 8, latencies=[0.001] * 200)
    assert write_p99_ms([writes, reads, deletes]) == 1.0  # 2 slow of 300 writes: past the p99
    assert write_p99_ms([writes]) > 400
