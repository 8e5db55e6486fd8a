"""The docker backend (needs a reachable Docker daemon) and the explicit unsafe_local backend."""

from __future__ import annotations

import pytest

from referee.sandbox import (
    DockerBackend,
    Limits,
    RunStatus,
    SandboxUnavailable,
    StdioTest,
    TestOutcome,
    UnsafeLocalBackend,
    run_program,
    run_tests,
)
from referee.sandbox.docker_backend import DEFAULT_IMAGE, docker_daemon_unreachable


@pytest.fixture(scope="module")
def docker_backend() -> DockerBackend:
    reason = docker_daemon_unreachable()
    if reason is not None:
        pytest.skip(f"environment: {reason}; the docker backend needs a running dockerd")
    # A reachable daemon without the image is a setup error, not a skip.
    return DockerBackend.create(image=DEFAULT_IMAGE)


def test_docker_runs_and_isolates(docker_backend: DockerBackend) -> None:
    result = run_program(
        "import os, socket\nprint(os.getuid(), input())\n"
        "try:\n    socket.create_connection(('127.0.0.1', 6379), timeout=2); print('NET')\n"
        "except OSError:\n    print('no net')\n"
        "try:\n    open('/evil', 'w'); print('WROTE')\nexcept OSError:\n    print('ro root')\n",
        "python",
        docker_backend,
        "hi\n",
    )
    assert result.status is RunStatus.OK, result.stderr
    assert result.stdout == "65534 hi\nno net\nro root\n"


def test_docker_limits(docker_backend: DockerBackend) -> None:
    assert (
        run_program(
            "while True: pass", "python", docker_backend, limits=Limits(wall_time_s=2)
        ).status
        is RunStatus.TIME_LIMIT
    )
    assert (
        run_program(
            "x = bytearray(1 << 30)", "python", docker_backend, limits=Limits(memory_mb=128)
        ).status
        is RunStatus.MEMORY_LIMIT
    )
    big = run_program(
        "import sys\nsys.stdout.write('x' * 10**6)",
        "python",
        docker_backend,
        limits=Limits(output_bytes=1000),
    )
    assert big.status is RunStatus.OUTPUT_LIMIT and big.truncated and len(big.stdout) == 1000


def test_docker_compiles_once(docker_backend: DockerBackend) -> None:
    before = docker_backend.compiles_started
    source = '#include <cstdio>\nint main(){int a;scanf("%d",&a);printf("%d\\n",a*2);}'
    result = run_tests(
        source, "cpp", [StdioTest("2", "4"), StdioTest("5", "10")], backend=docker_backend
    )
    assert result.all_passed
    assert docker_backend.compiles_started - before == 1


def test_docker_create_without_daemon_is_unavailable() -> None:
    with pytest.raises(SandboxUnavailable, match="Docker"):
        DockerBackend.create(base_url="unix:///nonexistent/docker.sock")


def test_unsafe_local_backend_runs_trusted_code() -> None:
    backend = UnsafeLocalBackend()
    result = run_tests(
        "print(int(input()) * 2)",
        "python",
        [StdioTest("2", "4"), StdioTest("3", "7")],
        backend=backend,
    )
    assert [t.outcome for t in result.tests] == [TestOutcome.PASSED, TestOutcome.WRONG_ANSWER]
    slow = run_program(
        "import time\ntime.sleep(30)", "python", backend, limits=Limits(wall_time_s=0.5)
    )
    assert slow.status is RunStatus.TIME_LIMIT
    compiled = run_tests("int main(){return 3;}", "c", [StdioTest("", "")], backend=backend)
    assert compiled.tests[0].outcome is TestOutcome.RUNTIME_ERROR
    assert compiled.tests[0].run is not None and compiled.tests[0].run.exit_code == 3
