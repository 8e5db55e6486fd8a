"""Shared fixtures: real referee servers (``referee.services.launcher``: uvicorn on a free port,
polled until ready), the taught judge, the sandbox languages, each needing its toolchain."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from server_env import TEST_SERVER_ENV

from referee.services.launcher import Server, start_referee

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


def start_server(tmp: Path, env: dict[str, str], name: str = "server") -> Server:
    """referee on a free port (``referee.services.launcher``), its log in ``tmp``."""
    return start_referee({**TEST_SERVER_ENV, **env}, log=tmp / f"{name}.log", cwd=tmp, name=name)


def stop_cleanly(srv: Server) -> None:
    """Stop ``srv`` and fail if it did not shut down cleanly or logged a traceback."""
    code = srv.stop()
    # uvicorn re-raises SIGTERM after a graceful shutdown, so -SIGTERM is a clean exit here.
    assert code in (0, -signal.SIGTERM), srv.log_tail()
    assert "Traceback" not in srv.log_tail(10**7), srv.log_tail()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The default server, shared by every module that needs no settings of its own."""
    srv = start_server(tmp_path_factory.mktemp("server"), {"REFEREE_MAX_BATCH_ITEMS": "2000"})
    yield srv
    stop_cleanly(srv)


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
    srv.stop()
    assert "Traceback" not in srv.log_tail(10**7), srv.log_tail()


@pytest.fixture(scope="module")
def referee_server_factory() -> Iterator[object]:
    """Start extra servers with their own settings: ``factory(tmp_path, env, name)``. They are
    stopped at the end of the module that started them."""
    started: list[Server] = []

    def factory(tmp: Path, env: dict[str, str], name: str = "server") -> Server:
        srv = start_server(tmp, env, name)
        started.append(srv)
        return srv

    yield factory
    for srv in started:
        srv.stop()
