"""Start a server in a subprocess on a free loopback port, wait until it answers, stop it.

The one launcher of the tests and the benchmarks: referee itself (``start_referee``: uvicorn with
``referee.services.app:create_app``), the test LLM server (``start_tiny_llm``: the
OpenAI-compatible server of ``referee.genrm.openai_server``) and a redis-server of one's own
(``start_redis``). Each is polled until it answers; one that exits first fails at once with the
tail of its log, one that never answers fails after ``timeout_s``, killed.

    with start_referee({"REFEREE_MATH_WORKERS": "2"}, log=tmp / "server.log") as server:
        httpx.get(server.url + "/healthz")

The port is probed free just before the start and passed as ``--port`` (uvicorn's ``--fd`` would
treat the socket as a Unix socket, without TCP_NODELAY: about 40 ms more per request).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TypedDict, Unpack

import httpx

__all__ = [
    "TINY_MODELS_ENV",
    "LaunchOptions",
    "Server",
    "ServerFailed",
    "free_port",
    "free_ports",
    "start_redis",
    "start_referee",
    "start_tiny_llm",
    "start_uvicorn",
    "worker_argv",
]

HOST = "127.0.0.1"
TINY_MODELS_ENV: Mapping[str, str] = {
    "REFEREE_JUDGE_BACKEND": "transformers",
    "REFEREE_JUDGE_MODEL": "tiny-random",
    "REFEREE_POLICY_BACKEND": "transformers",
    "REFEREE_POLICY_MODEL": "tiny-random",
    "REFEREE_TORCH_THREADS": "1",
}
"""The settings of a server (or CLI run) with every model part on: the randomly initialised
2-layer judge and policy, in-process, one torch thread (tests and benches; nothing downloaded)."""


class ServerFailed(RuntimeError):
    """The server exited before it answered, or did not answer in time and was killed (the
    message ends with the tail of its log when it has one; ``process``: the ended process)."""

    def __init__(self, message: str, process: subprocess.Popen[bytes]) -> None:
        super().__init__(message)
        self.process = process


@dataclass
class Server:
    """A started server: its URL (``http://127.0.0.1:PORT``), port, process and log file."""

    url: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path | None = None
    name: str = "server"
    group: bool = False  # started in a session of its own: stop() signals its process group
    _stopped: bool = field(default=False, repr=False)

    def log_tail(self, chars: int = 4000) -> str:
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self, timeout_s: float = 15.0) -> int:
        """Terminate the process (kill it after ``timeout_s``); its exit status."""
        if not self._stopped:
            self._stopped = True
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait()
        return int(self.process.returncode)

    def _signal(self, sig: signal.Signals) -> None:
        try:
            if self.group:
                os.killpg(self.process.pid, sig)
            elif self.process.poll() is None:
                self.process.send_signal(sig)
        except ProcessLookupError:
            pass

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def free_port() -> int:
    """A loopback TCP port free at the moment of asking, not handed out before in this process."""
    return free_ports(1)[0]


_HANDED_OUT: set[int] = set()


def free_ports(n: int) -> list[int]:
    """``n`` distinct loopback TCP ports free at the moment of asking.

    Each socket stays bound until all are chosen, and a port this process has handed out before
    is passed over: asked one at a time, the kernel may hand out the port it has just released
    again, and two services told the same port (one of them not started yet) collide.
    """
    socks: list[socket.socket] = []
    ports: list[int] = []
    try:
        while len(ports) < n:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            sock.bind((HOST, 0))
            port = int(sock.getsockname()[1])
            if port not in _HANDED_OUT:
                ports.append(port)
    finally:
        for sock in socks:
            sock.close()
    _HANDED_OUT.update(ports)
    return ports


def _http_ready(path: str) -> Callable[[Server], bool]:
    def ready(server: Server) -> bool:
        try:
            return httpx.get(server.url + path, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    return ready


def _redis_ready(server: Server) -> bool:
    """Redis answers PING with PONG (not LOADING: its data, if any, is loaded)."""
    try:
        with socket.create_connection((HOST, server.port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class LaunchOptions(TypedDict, total=False):
    """The options of :func:`launch` (besides ``env``) that the ``start_*`` functions pass on
    to it: its defaults are theirs."""

    log: Path | None
    cwd: Path | str | None
    timeout_s: float
    name: str
    group: bool


def launch(
    argv: Sequence[str],
    port: int,
    ready: Callable[[Server], bool],
    *,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    cwd: Path | str | None = None,
    timeout_s: float = 60.0,
    name: str = "server",
    group: bool = False,
) -> Server:
    """Run ``argv`` (with ``os.environ`` and ``env``; output to ``log``, else to this process's
    own; with ``group``, in a session of its own, so that ``stop()`` reaches its children too)
    and poll ``ready`` until it is true: the server, or ``ServerFailed``."""
    full_env = {**os.environ, **(env or {})}
    if log is not None:
        with open(log, "wb") as out:  # the child keeps its own descriptor
            proc = subprocess.Popen(
                list(argv),
                env=full_env,
                cwd=cwd,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=group,
            )
    else:
        proc = subprocess.Popen(list(argv), env=full_env, cwd=cwd, start_new_session=group)
    server = Server(f"http://{HOST}:{port}", port, proc, log, name, group)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            server.stop()  # its children, if any
            raise ServerFailed(f"{name} exited with {proc.returncode}:\n{server.log_tail()}", proc)
        if ready(server):
            return server
        time.sleep(0.1)
    server.stop(timeout_s=5)
    raise ServerFailed(f"{name} did not answer in {timeout_s:g} s:\n{server.log_tail()}", proc)


def _uvicorn_argv(app: str, port: int, factory: bool = True) -> list[str]:
    argv = [sys.executable, "-m", "uvicorn", *(["--factory"] if factory else []), app]
    return [*argv, "--host", HOST, "--port", str(port), "--log-level", "warning"]


def start_uvicorn(
    app: str,
    *,
    factory: bool = True,
    ready_path: str = "/readyz",
    env: Mapping[str, str] | None = None,
    port: int | None = None,
    extra_args: Sequence[str] = (),
    **options: Unpack[LaunchOptions],
) -> Server:
    """``python -m uvicorn [--factory] APP`` on ``port`` (a free one by default), ready once
    ``GET ready_path`` answers 200 (``env`` and ``options``: as :func:`launch` takes them)."""
    port = port or free_port()
    argv = [*_uvicorn_argv(app, port, factory), *extra_args]
    return launch(argv, port, _http_ready(ready_path), env=env, **options)


def start_referee(env: Mapping[str, str] | None = None, **options: Unpack[LaunchOptions]) -> Server:
    """referee's API (``create_app``, configured by ``REFEREE_*`` in ``env``), ready once
    ``/readyz`` answers 200 (``options``: as :func:`launch` takes them; ``name`` is
    ``referee`` unless given)."""
    from referee.services.settings import Settings

    options.setdefault("name", "referee")
    # the request line and headers may be as long as `referee serve` lets them be
    headers = (env or {}).get("REFEREE_MAX_HEADER_BYTES")
    if headers is None:
        headers = str(Settings.model_fields["max_header_bytes"].default)
    limit = ["--h11-max-incomplete-event-size", headers]
    return start_uvicorn("referee.services.app:create_app", env=env, extra_args=limit, **options)


# A local model's weights behind the OpenAI-compatible server (argv: model path, port).
_SERVE_LOCAL_MODEL = """
import sys
import uvicorn
from referee.genrm.openai_server import create_app
from referee.genrm.transformers_backend import TransformersBackend
app = create_app(TransformersBackend.from_pretrained(sys.argv[1]))
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
"""


def worker_argv(hostname: str, *, concurrency: int = 1) -> list[str]:
    """The command line of a Celery job worker (``referee worker``) with this interpreter:
    ``hostname`` as Celery takes it (``name@%h``), warnings only; start it with :func:`launch`
    or ``subprocess`` (the tests and the benchmarks kill and restart workers)."""
    return [
        sys.executable,
        "-m",
        "referee.services.cli.main",
        "worker",
        "--concurrency",
        str(concurrency),
        "--hostname",
        hostname,
        "--loglevel",
        "warning",
    ]


def start_tiny_llm(
    model_path: str | None = None,
    *,
    torch_threads: int | None = None,
    port: int | None = None,
    log: Path | None = None,
    timeout_s: float = 120.0,
) -> Server:
    """The test LLM server (``referee.genrm.openai_server``) serving the tiny random model, or
    the local model at ``model_path`` (transformers); ready once ``/v1/models`` answers."""
    env = {"OMP_NUM_THREADS": str(torch_threads)} if torch_threads else {}
    port = port or free_port()
    if model_path is None:
        argv = _uvicorn_argv("referee.genrm.openai_server:create_tiny_app", port)
    else:
        argv = [sys.executable, "-c", _SERVE_LOCAL_MODEL, model_path, str(port)]
    return launch(
        argv,
        port,
        _http_ready("/v1/models"),
        env=env,
        log=log,
        timeout_s=timeout_s,
        name="the test LLM server",
    )


def start_redis(
    directory: Path,
    *,
    port: int | None = None,
    persist: bool = False,
    timeout_s: float = 20.0,
) -> Server:
    """A redis-server of one's own on loopback (its files in ``directory``; with ``persist``,
    an append-only file synced on every write), ready once it answers PING.
    ``Server.url`` is then ``redis://127.0.0.1:PORT/0``."""
    port = port or free_port()
    argv = ["redis-server", "--port", str(port), "--bind", HOST, "--dir", str(directory)]
    argv += ["--save", "", "--appendonly", "yes" if persist else "no"]
    argv += ["--appendfsync", "always"] if persist else []
    server = launch(
        argv,
        port,
        _redis_ready,
        log=directory / f"redis-{port}.log",
        timeout_s=timeout_s,
        name="redis-server",
    )
    server.url = f"redis://{HOST}:{port}/0"
    return server
