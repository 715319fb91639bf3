"""Web workers forked from a short-lived zygote rather than from the launcher (Linux).

Why: when the launcher imports the application before granian forks its workers (`server.web.preload`),
the workers start sharing the launcher's pages and copy a page the first time they write to it. CPython
3.11 writes to every object a worker uses (its reference count; the bytecode of every function it runs
specialises in place), so after its first requests each worker holds its own copy of the pages it uses,
and the launcher keeps the original, which no process reads again (the launcher's own pages copied by
both workers reached 22 MB after 2,000 users). Kept for memory: bench/README.md, "Code kept for speed",
"Workers forked from a zygote".

How: the launcher (granian's supervisor) never imports the application. Whenever it starts workers (at
start, on SIGHUP, to replace one that died), it forks a zygote. The zygote imports the application
(`prepare`, server.web's preload), forks each worker the launcher asks for from that one import, and
exits when the launcher has asked for all of them. The launcher is a child subreaper
(`PR_SET_CHILD_SUBREAPER`), so the workers become its children when the zygote exits, and granian's
supervisor waits for, signals and replaces them as it does its own. The two workers still share every
page neither of them writes to; no third process holds the copies.

A replacement worker imports the code on disk when it starts, so SIGHUP also loads a new release. When
the zygote cannot import the application, the start fails with its error; a replacement that fails keeps
the workers already running and logs why.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import select
import signal
import sys
import threading
import traceback
import weakref
from collections.abc import Callable
from typing import Any

from granian.server.common import AbstractWorker, logger
from granian.server.mp import MPServer

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_READY = b"R"
_PID_BYTES = 4  # Linux pids stay under 2**22


def _prctl(option: int, value: int) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(option, value, 0, 0, 0) == 0


def subreaper_become() -> bool:
    """Make this process adopt the orphans of its descendants; False where the zygote cannot work (not Linux,
    or a sandbox that refuses pidfds, as a container's seccomp profile may), and then the launcher forks
    its workers itself, as granian does."""
    if sys.platform != "linux" or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        return False
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


class ZygoteFailed(RuntimeError):
    """The zygote exited before it started a worker: its import of the application failed (its output says
    why)."""


def _read(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


class Child:
    """A worker a zygote started, as the launcher sees it: the part of multiprocessing.Process that granian's
    supervisor uses (pid, start, join, is_alive, terminate, kill). A pidfd names the process, so a signal
    never reaches another process that later got the same pid."""

    def __init__(self, pid: int, zygote: Zygote) -> None:
        self.pid = pid
        self.exitcode: int | None = None
        self._zygote = zygote
        self._fd = os.pidfd_open(pid)
        self._lock = threading.Lock()
        weakref.finalize(self, os.close, self._fd)

    def start(self) -> None:
        """Nothing to do: the zygote started it."""

    def join(self, timeout: float | None = None) -> None:
        if self.exitcode is None and self._exited(timeout):
            self._reap()

    def is_alive(self) -> bool:
        return self.exitcode is None and not self._exited(0)

    def _exited(self, timeout: float | None) -> bool:
        """Whether the process has exited, waiting up to `timeout` seconds (None: until it does). A pidfd
        reads as ready once its process is gone."""
        waiter = select.poll()
        waiter.register(self._fd, select.POLLIN)
        return bool(waiter.poll(None if timeout is None else max(0, int(timeout * 1000))))

    def terminate(self) -> None:
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, signum: int) -> None:
        if self.exitcode is None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._fd, signum)

    def _reap(self) -> None:
        with self._lock:
            if self.exitcode is not None:
                return
            self._zygote.wait()  # while the zygote lives the worker is its child, not the launcher's
            _, status = os.waitpid(self.pid, 0)
            self.exitcode = os.waitstatus_to_exitcode(status)


class Zygote:
    """A child of the launcher that imports the application, then forks the workers it is asked for (one
    4-byte worker index per order on a pipe, answered by the worker's pid on another) until its orders end."""

    def __init__(self, server: ZygoteServer, spawn_target: Any, target_loader: Any) -> None:
        orders_in, self._orders = os.pipe()
        self._answers, answers_out = os.pipe()
        self._lock = threading.Lock()
        self._reaped = False
        # The launcher's own objects (granian, asyncio, logging) are shared with the zygote and
        # so with the workers, until a collection writes to their headers. Frozen, the zygote's collections
        # (and the workers') leave them be, and those pages stay shared by all of them.
        gc.collect()
        gc.freeze()
        self.pid = os.fork()
        if self.pid == 0:  # the zygote; it never returns from here
            os.close(self._orders)
            os.close(self._answers)
            _zygote_run(server, spawn_target, target_loader, orders_in, answers_out)
        os.close(orders_in)
        os.close(answers_out)
        if _read(self._answers, 1) != _READY:
            self.close()
            raise ZygoteFailed("the zygote could not import the application")

    def fork(self, idx: int) -> Child:
        os.write(self._orders, idx.to_bytes(_PID_BYTES, "little"))
        answer = _read(self._answers, _PID_BYTES)
        if len(answer) < _PID_BYTES:
            raise ZygoteFailed(f"the zygote exited before it started worker-{idx + 1}")
        return Child(int.from_bytes(answer, "little"), self)

    def close(self) -> None:
        """No more orders: the zygote exits, and its workers become the launcher's children."""
        os.close(self._orders)
        os.close(self._answers)
        self.wait()

    def wait(self) -> None:
        with self._lock:
            if not self._reaped:
                os.waitpid(self.pid, 0)
                self._reaped = True


def _zygote_run(server: ZygoteServer, spawn_target: Any, target_loader: Any, orders: int, answers: int) -> None:
    code = 1
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the launcher gone, the zygote goes too
        _pipes_closed_in_workers(orders, answers)
        server.prepare()
        os.write(answers, _READY)
        while order := _read(orders, _PID_BYTES):
            # granian's own worker process (multiprocessing, fork), made and started here, in the zygote.
            worker = MPServer._spawn_worker(server, int.from_bytes(order, "little"), spawn_target, target_loader)  # noqa: SLF001
            worker.inner.start()
            os.write(answers, worker.inner.pid.to_bytes(_PID_BYTES, "little"))
        code = 0
    except BaseException:  # noqa: BLE001 - reported on stderr; the launcher sees the pipe close
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)  # not the launcher's exit handlers: they would wait for the workers


class _InheritedPipes:
    """The zygote's pipe ends, which a worker forked by it closes first (else the launcher would not see the
    pipe close if the zygote died). Once: a worker's own children inherit the flag already set."""

    kept: _InheritedPipes | None = None  # multiprocessing keeps only a weak reference to it

    def __init__(self, *fds: int) -> None:
        self.fds = fds
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            for fd in self.fds:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _pipes_closed_in_workers(*fds: int) -> None:
    import multiprocessing.util

    _InheritedPipes.kept = _InheritedPipes(*fds)
    multiprocessing.util.register_after_fork(_InheritedPipes.kept, _InheritedPipes.close)


class ZygoteWorker(AbstractWorker):
    """granian's handle of one worker, its process started by the server's current zygote."""

    _idl = "PID"
    parent: ZygoteServer
    inner: Child

    def _spawn(self, target: Any, args: Any) -> None:
        """The zygote makes the process, at start()."""

    def start(self) -> None:
        self.inner = self.parent.zygote().fork(self.idx)
        super().start()

    def _id(self) -> int:
        return self.inner.pid

    def terminate(self) -> None:
        self.interrupt_by_parent = True
        self.inner.terminate()

    def kill(self) -> None:
        self.interrupt_by_parent = True
        self.inner.kill()


class ZygoteServer(MPServer):
    """granian's multiprocess server whose workers come from a zygote (see the module's docstring)."""

    prepare: Callable[[], None] = staticmethod(lambda: None)  # what the zygote runs before its forks
    _zygote: Zygote | None = None

    def zygote(self) -> Zygote:
        if self._zygote is None:
            raise ZygoteFailed("no zygote is open")
        return self._zygote

    def _zygote_close(self) -> None:
        zygote, self._zygote = self._zygote, None
        if zygote is not None:
            zygote.close()

    def _spawn_worker(self, idx: int, target: Any, callback_loader: Any) -> ZygoteWorker:  # type: ignore[override]
        return ZygoteWorker(parent=self, idx=idx, target=target, args=None)

    def _spawn_workers(self, spawn_target: Any, target_loader: Any) -> None:
        self._zygote = Zygote(self, spawn_target, target_loader)  # at start, a failure stops the server
        try:
            super()._spawn_workers(spawn_target, target_loader)
        finally:
            self._zygote_close()

    def _respawn_workers(self, workers: Any, spawn_target: Any, target_loader: Any, delay: float = 0) -> None:
        try:
            self._zygote = Zygote(self, spawn_target, target_loader)
        except ZygoteFailed as exc:
            logger.error(f"Workers {[idx + 1 for idx in workers]} not replaced: {exc}")
            return
        try:
            super()._respawn_workers(workers, spawn_target, target_loader, delay)
        finally:
            self._zygote_close()


def use(prepare: Callable[[], None]) -> None:
    """Make granian's command start a ZygoteServer whose zygote runs `prepare`. granian's command builds its
    server from the name `Server` in its module; that name is the hook."""
    import granian.cli

    ZygoteServer.prepare = staticmethod(prepare)
    granian.cli.Server = ZygoteServer
