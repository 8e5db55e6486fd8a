"""The docker backend (real runs in a container; needs a reachable Docker daemon and the image
``docker/build-sandbox-image.sh`` builds, which ``make test`` provides through tests/prepare.sh)
and the explicit unsafe_local backend.

No daemon, or a daemon without the image, is a set-up error: the docker tests fail saying how to
get them, never skip.
Each docker test checks that its containers and temporary dirs are gone afterwards.
"""

from __future__ import annotations

import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fork_bombs import assert_bash_fork_bomb_contained, assert_python_fork_bomb_hits_pids_limit

from referee.sandbox import (
    DockerBackend,
    Limits,
    RunResult,
    RunStatus,
    SandboxUnavailable,
    StdioTest,
    TestOutcome,
    UnsafeLocalBackend,
    get_language,
    known_languages,
    run_program,
    run_tests,
)
from referee.sandbox.docker_backend import (
    CONTAINER_LABEL,
    DEFAULT_IMAGE,
    docker_daemon_unreachable,
)
from referee.sandbox.languages import by_name, by_name_argv

HELLO = {
    "python": "print('hello', input())",
    "c": '#include <stdio.h>\nint main(void){ char s[64]; if (scanf("%63s", s) != 1) return 1;'
    ' printf("hello %s\\n", s); return 0; }',
    "cpp": "#include <iostream>\n#include <string>\nint main(){ std::string s; std::cin >> s;"
    ' std::cout << "hello " << s << "\\n"; }',
    "java": "import java.util.*;\npublic class Main { public static void main(String[] a) {"
    ' System.out.println("hello " + new Scanner(System.in).next()); } }',
    "javascript": "const s = require('fs').readFileSync(0, 'utf8').trim();"
    "\nconsole.log('hello ' + s);",
    "go": 'package main\nimport "fmt"\nfunc main() { var s string; fmt.Scan(&s);'
    ' fmt.Println("hello " + s) }',
    "rust": "fn main() { let mut s = String::new(); std::io::stdin().read_line(&mut s).unwrap();"
    ' println!("hello {}", s.trim()); }',
    "bash": 'read x\necho "hello $x"',
}
QUICK = Limits(wall_time_s=5.0, memory_mb=256, max_processes=32)


@pytest.fixture(scope="module")
def docker_backend() -> Iterator[DockerBackend]:
    reason = docker_daemon_unreachable()
    if reason is not None:  # a set-up error, not a skip: `make test` prepares both
        pytest.fail(
            f"{reason}; the docker backend's tests need a running dockerd and {DEFAULT_IMAGE}: "
            "`bash docker/build-sandbox-image.sh` as root starts one and builds the image "
            "(`make test` runs it through tests/prepare.sh)",
            pytrace=False,
        )
    # A reachable daemon without the image is a setup error too.
    backend = DockerBackend.create(image=DEFAULT_IMAGE)
    yield backend
    backend.close()


def _our_containers(backend: DockerBackend) -> list[str]:
    found = backend.client.containers.list(all=True, filters={"label": CONTAINER_LABEL})
    return [c.short_id for c in found]


def _io_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("referee-docker-*")}


@pytest.fixture()
def docker(docker_backend: DockerBackend) -> Iterator[DockerBackend]:
    """The backend, asserting that the test leaves no container and no io dir behind."""
    assert not _our_containers(docker_backend), "containers of an earlier run are still there"
    dirs_before = _io_dirs()
    yield docker_backend
    assert not _our_containers(docker_backend), "a run left its container behind"
    assert _io_dirs() <= dirs_before, "a run left its io dir behind"


def py(backend: DockerBackend, source: str, limits: Limits = QUICK, stdin: str = "") -> RunResult:
    return run_program(source, "python", backend, stdin, limits)


def test_by_name_argv_maps_host_toolchains_to_plain_names() -> None:
    assert by_name_argv(("/root/.pyenv/versions/3.12.7/bin/python3.12", "-I", "x.py")) == (
        "python3",
        "-I",
        "x.py",
    )
    assert by_name_argv(("/usr/lib/jvm/java-17-openjdk-amd64/bin/java", "-cp", "/code")) == (
        "java",
        "-cp",
        "/code",
    )
    assert by_name_argv(("/usr/bin/g++", "-O2"))[0] == "g++"
    assert by_name_argv(("/usr/bin/gcc-12",))[0] == "gcc"
    assert by_name_argv(("/usr/lib/go-1.19/bin/go", "build"))[0] == "go"
    assert by_name_argv(("/code/main",)) == ("/code/main",)
    assert by_name_argv(("/usr/bin/strace",)) == ("/usr/bin/strace",)
    recipe = by_name(get_language("python"))
    assert recipe.run_argv("main.py", Limits())[0] == "python3"
    assert recipe.toolchain_dirs == () and "PATH" not in recipe.full_env()


@pytest.mark.parametrize("language", known_languages())  # the image has every toolchain
def test_docker_hello_world(docker: DockerBackend, language: str) -> None:
    assert language in docker.languages(), f"the image lacks {language}: {docker.tools}"
    result = run_program(HELLO[language], language, docker, "world\n", Limits(wall_time_s=20.0))
    assert result.status is RunStatus.OK, (result.message, result.stderr)
    assert result.stdout == "hello world\n"


def test_docker_runs_as_nobody_with_read_only_root(docker: DockerBackend) -> None:
    result = py(
        docker,
        "import os\nprint(os.getuid(), os.getgid(), input())\n"
        "try:\n    open('/evil', 'w'); print('WROTE')\nexcept OSError:\n    print('ro root')\n"
        "try:\n    open('/code/evil', 'w'); print('WROTE')\nexcept OSError:\n    print('ro code')\n"
        "open('/work/ok', 'w').write('x'); open('/tmp/ok', 'w').write('x'); print('tmpfs rw')\n"
        "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
        "print(open('/proc/self/status').read().split('NoNewPrivs:')[1].split()[0])\n",
        stdin="hi\n",
    )
    assert result.status is RunStatus.OK, result.stderr
    assert result.stdout == "65534 65534 hi\nro root\nro code\ntmpfs rw\n0000000000000000\n1\n"


def test_docker_wrong_answer_and_runtime_errors(docker: DockerBackend) -> None:
    result = run_tests(
        "print(int(input()) * 2)",
        "python",
        [StdioTest("2", "4"), StdioTest("3", "7"), StdioTest("x", "0")],
        QUICK,
        backend=docker,
    )
    assert [t.outcome for t in result.tests] == [
        TestOutcome.PASSED,
        TestOutcome.WRONG_ANSWER,
        TestOutcome.RUNTIME_ERROR,
    ]
    exited = py(docker, "import sys\nprint('partial')\nsys.exit(3)")
    assert exited.status is RunStatus.RUNTIME_ERROR
    assert exited.exit_code == 3 and exited.signal is None and exited.stdout == "partial\n"
    raised = py(docker, "raise ValueError('boom')")
    assert raised.status is RunStatus.RUNTIME_ERROR and "ValueError: boom" in raised.stderr
    segv = run_program("int main(){ volatile int *p = 0; return *p; }", "c", docker, "", QUICK)
    assert segv.status is RunStatus.RUNTIME_ERROR
    assert segv.signal == 11 and segv.exit_code is None and "SIGSEGV" in segv.message
    broken = run_tests("int main( {", "cpp", [StdioTest("", "")], QUICK, backend=docker)
    assert broken.compile is not None and broken.compile.status is RunStatus.COMPILE_ERROR
    assert "error" in broken.compile.stderr


def test_docker_time_limits(docker: DockerBackend) -> None:
    started = time.monotonic()
    slept = py(docker, "import time\ntime.sleep(60)", Limits(wall_time_s=1.0))
    assert slept.status is RunStatus.TIME_LIMIT
    assert time.monotonic() - started < 6
    busy = py(docker, "while True: pass", Limits(wall_time_s=10.0, cpu_time_s=1.0))
    assert busy.status is RunStatus.TIME_LIMIT
    assert busy.wall_time_s < 8


def test_docker_memory_limit(docker: DockerBackend) -> None:
    result = py(docker, "x = bytearray(1 << 30)\nprint(len(x))", Limits(memory_mb=128))
    assert result.status is RunStatus.MEMORY_LIMIT, (result.message, result.stderr)
    cpp = run_program(
        "#include <vector>\nint main(){ std::vector<std::vector<char>> v;"
        " for(;;) v.emplace_back(1<<20, 1); }",
        "cpp",
        docker,
        limits=Limits(memory_mb=96),
    )
    assert cpp.status is RunStatus.MEMORY_LIMIT, (cpp.message, cpp.stderr)


# A hang guard, not a timing check: a flood once stalled each run ~60 s (the container's kill
# waited for output nobody read), about one run in two, so floods are run several times.
@pytest.mark.timeout(50)
def test_docker_output_limit(docker: DockerBackend) -> None:
    for _ in range(4):
        big = py(
            docker,
            "import sys\nwhile True: sys.stdout.write('x' * 4096)",
            Limits(output_bytes=1000, wall_time_s=30.0),
        )
        assert big.status is RunStatus.OUTPUT_LIMIT, (big.message, big.stderr)
        assert big.truncated and len(big.stdout) == 1000
        assert "stdout exceeded 1000 bytes" in big.message
        loud = py(
            docker,
            "import sys\nwhile True: sys.stderr.write('e' * 65536)",
            Limits(output_bytes=1000, wall_time_s=30.0),
        )
        assert loud.status is RunStatus.OUTPUT_LIMIT, (loud.message, loud.stderr)
        assert "stderr exceeded 1000 bytes" in loud.message
    n = 3 * 1024 * 1024
    full = py(docker, f"import sys\nsys.stdout.write('y' * {n})", Limits(output_bytes=4 * n))
    assert full.status is RunStatus.OK and not full.truncated and len(full.stdout) == n
    noisy = py(
        docker,
        "import sys\nsys.stderr.write('e' * 200000)\nprint('done')",
        Limits(stderr_bytes=100),
    )
    assert noisy.status is RunStatus.OK and noisy.stdout == "done\n"
    assert noisy.stderr_truncated and len(noisy.stderr) == 100


def test_docker_has_no_network(docker: DockerBackend) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # reachable from the host
        result = py(
            docker,
            "import os, socket\nprint(sorted(os.listdir('/sys/class/net')))\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2); print('NET')\n"
            "except OSError:\n    print('no host loopback')\n",
        )
    assert result.status is RunStatus.OK, result.stderr
    assert result.stdout == "['lo']\nno host loopback\n"


def test_docker_fork_bombs_are_contained(docker: DockerBackend) -> None:
    assert_bash_fork_bomb_contained(docker, within_s=15)
    assert_python_fork_bomb_hits_pids_limit(docker)


def test_docker_daemons_do_not_outlive_the_run(docker: DockerBackend) -> None:
    started = time.monotonic()
    result = py(
        docker,
        "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        "        os.close(1); os.close(2)\n        os.execv('/bin/sleep', ['sleep', '60'])\n"
        "    os._exit(0)\nprint('parent done')\n",
    )
    assert result.status is RunStatus.OK and result.stdout == "parent done\n"
    assert time.monotonic() - started < 5  # the run did not wait for the daemon
    # the `docker` fixture then checks that the container (and so the daemon) is gone


def test_docker_compiles_once(docker: DockerBackend) -> None:
    before = docker.compiles_started
    source = '#include <cstdio>\nint main(){int a;scanf("%d",&a);printf("%d\\n",a*2);}'
    result = run_tests(source, "cpp", [StdioTest("2", "4"), StdioTest("5", "10")], backend=docker)
    assert result.all_passed
    assert docker.compiles_started - before == 1


def test_docker_tool_missing_from_the_image_is_a_sandbox_error(
    docker_backend: DockerBackend,
) -> None:
    narrow = DockerBackend(docker_backend.client, docker_backend.image, frozenset({"python3"}))
    assert narrow.languages() == ["python"]
    result = run_program("int main(){return 0;}", "c", narrow)
    assert result.status is RunStatus.SANDBOX_ERROR and "'gcc'" in result.message


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
