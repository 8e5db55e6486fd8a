"""Real programs in the real bubblewrap backend: statuses, limits, output handling."""

from __future__ import annotations

import threading
import time

import pytest
from python_runs import py, py_ok

from referee.sandbox import BwrapBackend, Limits, RunStatus, prepare, run_program


def test_ok_reads_stdin_and_reports_times(backend: BwrapBackend) -> None:
    result = py_ok(
        backend,
        "import sys; print(sum(int(x) for x in sys.stdin.read().split()))",
        stdin="1 2 3\n",
        stdout="6\n",
    )
    assert result.exit_code == 0 and result.signal is None
    assert result.wall_time_s > 0
    if backend.cgroups is not None:
        assert result.cpu_time_s is not None and result.memory_peak_bytes


def test_runs_as_unprivileged_user_with_no_capabilities(backend: BwrapBackend) -> None:
    result = py_ok(
        backend,
        "import os\nprint(os.getuid(), os.getgid())\n"
        "print([l for l in open('/proc/self/status') if l.startswith(('CapEff','NoNew'))])",
    )
    assert result.stdout.startswith("65534 65534\n")
    assert "CapEff:\\t0000000000000000" in result.stdout
    assert "NoNewPrivs:\\t1" in result.stdout


def test_runtime_error_exit_code(backend: BwrapBackend) -> None:
    result = py(backend, "import sys\nprint('partial')\nsys.exit(3)")
    assert result.status is RunStatus.RUNTIME_ERROR
    assert result.exit_code == 3 and result.signal is None
    assert result.stdout == "partial\n"


def test_runtime_error_exception_has_traceback(backend: BwrapBackend) -> None:
    result = py(backend, "raise ValueError('boom')")
    assert result.status is RunStatus.RUNTIME_ERROR
    assert result.exit_code == 1
    assert "ValueError: boom" in result.stderr


def test_runtime_error_signal(backend: BwrapBackend) -> None:
    result = run_program("int main(){ volatile int *p = 0; return *p; }", "c", backend)
    assert result.status is RunStatus.RUNTIME_ERROR
    assert result.signal == 11 and result.exit_code is None
    assert "SIGSEGV" in result.message


def test_infinite_loop_hits_wall_limit(backend: BwrapBackend) -> None:
    started = time.monotonic()
    result = py(backend, "import time\ntime.sleep(60)", limits=Limits(wall_time_s=1.0))
    assert result.status is RunStatus.TIME_LIMIT
    assert time.monotonic() - started < 5


def test_busy_loop_hits_cpu_limit(backend: BwrapBackend) -> None:
    result = py(backend, "while True: pass", limits=Limits(wall_time_s=10.0, cpu_time_s=1.0))
    assert result.status is RunStatus.TIME_LIMIT
    assert result.wall_time_s < 8


def test_memory_hog_hits_memory_limit(backend: BwrapBackend) -> None:
    if backend.cgroups is None:
        pytest.fail("the memory cgroup is needed for memory_limit; cgroups were not detected")
    result = py(backend, "x = bytearray(1 << 30)\nprint(len(x))", limits=Limits(memory_mb=128))
    assert result.status is RunStatus.MEMORY_LIMIT
    cpp = run_program(
        "#include <vector>\n#include <cstdio>\nint main(){ std::vector<std::vector<char>> v;"
        " for(;;) v.emplace_back(1<<20, 1); }",
        "cpp",
        backend,
        limits=Limits(memory_mb=96),
    )
    assert cpp.status is RunStatus.MEMORY_LIMIT


def test_huge_output_is_capped_and_flagged(backend: BwrapBackend) -> None:
    limits = Limits(output_bytes=100_000)
    result = py(backend, "import sys\nwhile True: sys.stdout.write('x' * 4096)", limits=limits)
    assert result.status is RunStatus.OUTPUT_LIMIT
    assert result.truncated
    assert len(result.stdout) == 100_000


def test_long_output_under_the_cap_is_complete(backend: BwrapBackend) -> None:
    n = 3 * 1024 * 1024
    result = py_ok(
        backend,
        f"import sys\nsys.stdout.write('y' * {n})",
        limits=Limits(output_bytes=4 * 1024 * 1024),
    )
    assert not result.truncated
    assert len(result.stdout) == n


def test_large_stdin_and_stdout_stream_concurrently(backend: BwrapBackend) -> None:
    data = "".join(f"{i}\n" for i in range(400_000))  # ~2.6 MB, far over a pipe buffer
    result = run_program("cat", "bash", backend, data, Limits(output_bytes=8 * 1024 * 1024))
    assert result.status is RunStatus.OK
    assert result.stdout == data


def test_stderr_flood_is_capped_without_failing(backend: BwrapBackend) -> None:
    result = py_ok(
        backend,
        "import sys\nsys.stderr.write('e' * 500_000)\nprint('done')",
        limits=Limits(stderr_bytes=1000),
        stdout="done\n",
    )
    assert result.stderr_truncated and len(result.stderr) == 1000


def test_invalid_utf8_is_replaced(backend: BwrapBackend) -> None:
    result = py_ok(
        backend,
        "import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')\n"
        "sys.stderr.buffer.write(b'\\xc3(')",
        stdout="ok \ufffd\ufffd end\n",
    )
    assert "\ufffd" in result.stderr


def test_compile_once_run_many(backend: BwrapBackend) -> None:
    compiles, runs = backend.compiles_started, backend.runs_started
    source = "#include <iostream>\nint main(){ long a,b; std::cin>>a>>b; std::cout<<a*b<<'\\n'; }"
    with prepare(source, "cpp", backend) as program:
        assert program.compile_result is not None and program.compile_result.ok
        outputs = [program.run(f"{i} {i + 1}\n").stdout for i in range(5)]
    assert outputs == [f"{i * (i + 1)}\n" for i in range(5)]
    assert backend.compiles_started - compiles == 1
    assert backend.runs_started - runs == 5


@pytest.mark.parametrize("language", ["c", "cpp"])
def test_compile_error(backend: BwrapBackend, language: str) -> None:
    with prepare("int main( { return 0 }", language, backend) as program:
        assert program.compile_result is not None
        assert program.compile_result.status is RunStatus.COMPILE_ERROR
        assert "error" in program.compile_result.stderr
        assert program.run("").status is RunStatus.COMPILE_ERROR


def test_concurrent_runs_from_threads(backend: BwrapBackend) -> None:
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        results[i] = py(backend, f"print({i} * 2)").stdout

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: f"{i * 2}\n" for i in range(6)}
