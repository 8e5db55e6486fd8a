"""Shared fixtures: a real uvicorn server on a free port, polled until ready; the sandbox
languages, each needing its toolchain."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent

# The Debian packages of each sandbox language's toolchain (tests/prepare.sh installs them all).
TOOLCHAIN_PACKAGES = {
    "python": "python3",
    "c": "gcc libc6-dev",
    "cpp": "g++",
    "java": "default-jdk-headless",
    "javascript": "nodejs",
    "go": "golang-go",
    "rust": "rustc",
    "bash": "bash",
}


def require_toolchain(language: str) -> None:
    """Return if ``language``'s toolchain is installed here. Otherwise fail on CI (``CI`` set:
    CI installs every toolchain, so a missing one is a broken set-up, not a smaller machine),
    and elsewhere skip, saying what to install."""
    from referee.sandbox import available_languages

    if language in available_languages():
        return
    how = (
        f"the {language} toolchain is not installed here: `apt-get install "
        f"{TOOLCHAIN_PACKAGES.get(language, language)}` (or `make test` as root, which runs "
        "tests/prepare.sh)"
    )
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{how}; CI must test every language", pytrace=False)
    pytest.skip(how)


@pytest.fixture()
def toolchain() -> Callable[[str], None]:
    """``toolchain(language)``: ``require_toolchain`` for a test that needs one language."""
    return require_toolchain


def _known_languages() -> list[str]:
    from referee.sandbox import known_languages

    return known_languages()


@pytest.fixture(params=_known_languages())
def installed_language(request: pytest.FixtureRequest) -> str:
    """Each language referee has a recipe for, with its toolchain (see ``require_toolchain``)."""
    language = str(request.param)
    require_toolchain(language)
    return language


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(tmp: Path, env: dict[str, str], name: str = "server") -> Server:
    # A port probed free just before (uvicorn's --fd would make it treat the socket as a Unix
    # socket, without TCP_NODELAY: 40 ms per request).
    port = _free_port()
    log = tmp / f"{name}.log"
    full_env = {**os.environ, "REFEREE_MATH_WORKERS": "2", "REFEREE_MATH_TIMEOUT_S": "2", **env}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "--factory",
                "referee.services.app:create_app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=tmp,
        )
    server = Server(f"http://127.0.0.1:{port}", proc, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            if httpx.get(server.url + "/readyz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"the server did not become ready:\n{server.log_tail()}")


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("server"), {"REFEREE_MAX_BATCH_ITEMS": "2000"})
    yield srv
    stop_server(srv)
    # uvicorn re-raises SIGTERM after a graceful shutdown, so -SIGTERM is a clean exit here.
    assert srv.process.returncode in (0, -signal.SIGTERM), srv.log_tail()
    assert "Traceback" not in srv.log.read_text(errors="replace"), srv.log_tail()


@pytest.fixture(scope="session")
def taught_judge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny judge taught the verdicts of tests/trained_judge.py (seconds): a local model's
    path, for ``REFEREE_JUDGE_MODEL`` or ``TransformersBackend.from_pretrained``."""
    from trained_judge import collect_lessons, teach

    return teach(collect_lessons(), tmp_path_factory.mktemp("taught-judge"))


@pytest.fixture(scope="session")
def judge_server(taught_judge: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A referee server whose judge is the taught model (transformers backend, in-process)."""
    env = {
        "REFEREE_JUDGE_BACKEND": "transformers",
        "REFEREE_JUDGE_MODEL": str(taught_judge),
        "REFEREE_TORCH_THREADS": "1",
        "REFEREE_MATH_WORKERS": "1",
    }
    srv = start_server(tmp_path_factory.mktemp("judge-server"), env, "judge-server")
    yield srv
    stop_server(srv)
    assert "Traceback" not in srv.log.read_text(errors="replace"), srv.log_tail()


@pytest.fixture(scope="session")
def referee_server_factory() -> Iterator[object]:
    """Start extra servers with their own settings: ``factory(tmp_path, env, name)``."""
    started: list[Server] = []

    def factory(tmp: Path, env: dict[str, str], name: str = "server") -> Server:
        srv = start_server(tmp, env, name)
        started.append(srv)
        return srv

    yield factory
    for srv in started:
        stop_server(srv)
