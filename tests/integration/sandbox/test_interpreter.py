"""The persistent interpreter in the real bubblewrap sandbox: state across calls, REPL display,
tracebacks, interrupts, kills, limits, isolation between sessions, and nothing left after close
(``no_leftovers`` checks for surviving sandbox processes and cgroups after each test)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from referee.sandbox import BwrapBackend, CellStatus, InterpreterLimits, PersistentInterpreter
from referee.sandbox.languages import get_language
from referee.sandbox.supervised import supervisor_source

pytestmark = pytest.mark.usefixtures("no_leftovers")

LIMITS = InterpreterLimits(wall_time_s=3.0, memory_mb=512, max_processes=32, interrupt_grace_s=1.0)


@pytest.fixture()
def interp(backend: BwrapBackend) -> Iterator[PersistentInterpreter]:
    with PersistentInterpreter(backend, LIMITS) as it:
        yield it


def ok(interp: PersistentInterpreter, code: str) -> str:
    result = interp.run(code)
    assert result.status is CellStatus.OK, result
    return result.stdout


def test_variables_imports_and_functions_survive_calls(interp: PersistentInterpreter) -> None:
    assert ok(interp, "import math\nx = 40\ndef f(y):\n    return y + 2\n") == ""
    assert ok(interp, "print(f(x), math.factorial(5))") == "42 120\n"
    assert ok(interp, "x += 1\nx") == "41\n"
    assert interp.run("x").calls == 4


def test_the_last_expression_is_shown_as_a_repl_shows_it(interp: PersistentInterpreter) -> None:
    assert ok(interp, "s = 'a'\ns") == "'a'\n"  # the repr, as a REPL prints it
    assert ok(interp, "None") == ""
    assert ok(interp, "print('p')") == "p\n"  # print's None is not shown
    assert ok(interp, "1 + 1;") == ""  # a trailing semicolon hides it, as in Jupyter
    assert ok(interp, "y = 3\ny * 2  # doubled") == "6\n"
    assert ok(interp, "for i in range(2):\n    i") == ""  # not a last expression statement


def test_sympy_and_numpy_of_the_server_environment_are_importable(
    interp: PersistentInterpreter,
) -> None:
    assert {"sympy", "mpmath"} <= set(interp.packages)
    code = "import sympy as sp\nx = sp.Symbol('x')\nsp.factor(x**2 - 1)"
    assert ok(interp, code) == "(x - 1)*(x + 1)\n"
    if "numpy" in interp.packages:
        assert ok(interp, "import numpy as np\nint(np.arange(5).sum())") == "10\n"
    shown = ok(interp, "import os\nsorted(os.listdir('/opt/referee/site'))")
    assert set(eval(shown)) <= {"numpy", "numpy.libs", "sympy", "mpmath"}
    result = interp.run("import fastapi")  # the rest of the server's environment is not there
    assert result.status is CellStatus.ERROR and "ModuleNotFoundError" in result.traceback


def test_an_exception_reads_as_a_repl_traceback(interp: PersistentInterpreter) -> None:
    result = interp.run("def f(d):\n    return d['k']\n\nf({})")
    assert result.status is CellStatus.ERROR
    lines = result.traceback.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1].startswith('  File "<cell-1>", line 4, in <module>')
    assert "    return d['k']" in lines
    assert lines[-1] == "KeyError: 'k'"
    assert "supervisor" not in result.traceback and "<string>" not in result.traceback
    syntax = interp.run("x = (")
    assert syntax.status is CellStatus.ERROR
    assert syntax.traceback.splitlines()[0] == '  File "<cell-2>", line 1'
    assert syntax.traceback.splitlines()[-1].startswith("SyntaxError:")
    assert ok(interp, "print('still here')") == "still here\n"


def test_output_of_the_cell_and_its_subprocesses_is_captured(
    interp: PersistentInterpreter,
) -> None:
    result = interp.run(
        "import sys, subprocess\nprint('out')\nprint('err', file=sys.stderr)\n"
        "subprocess.run(['/bin/echo', 'child'])\nsubprocess.run('echo e2 >&2', shell=True)\n"
        "None"
    )
    assert result.status is CellStatus.OK
    assert result.stdout == "out\nchild\n"
    assert result.stderr == "err\ne2\n"


def test_an_endless_loop_is_interrupted_and_the_state_kept(
    interp: PersistentInterpreter,
) -> None:
    ok(interp, "kept = [1, 2, 3]")
    result = interp.run("while True:\n    pass")
    assert result.status is CellStatus.TIMEOUT
    assert not result.state_lost
    assert result.traceback.splitlines()[-1] == "KeyboardInterrupt"
    assert result.wall_s >= LIMITS.wall_time_s
    assert ok(interp, "kept") == "[1, 2, 3]\n"
    sleeping = interp.run("import subprocess\nsubprocess.run(['sleep', '100'])")
    assert sleeping.status is CellStatus.TIMEOUT and not sleeping.state_lost
    assert ok(interp, "len(kept)") == "3\n"


def test_a_cell_that_swallows_the_interrupt_is_killed_and_the_next_call_works(
    interp: PersistentInterpreter,
) -> None:
    ok(interp, "gone = 1")
    result = interp.run(
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except KeyboardInterrupt:\n        pass"
    )
    assert result.status is CellStatus.TIMEOUT
    assert result.state_lost
    assert not interp.alive
    fresh = interp.run("1 + 1")
    assert fresh.status is CellStatus.OK and fresh.stdout == "2\n"
    assert fresh.restarted and not fresh.state_lost
    lost = interp.run("gone")
    assert lost.status is CellStatus.ERROR and lost.traceback.endswith(
        "NameError: name 'gone' is not defined\n"
    )
    assert not lost.restarted


def test_an_interpreter_that_exits_is_reported_crashed(interp: PersistentInterpreter) -> None:
    result = interp.run("import os\nos._exit(3)")
    assert result.status is CellStatus.CRASHED and result.state_lost
    assert interp.run("'back'").stdout == "'back'\n"


def test_a_fork_that_runs_past_the_cell_does_not_answer(interp: PersistentInterpreter) -> None:
    ok(interp, "kept = 7")
    result = interp.run(
        "import os\npid = os.fork()\nif pid:\n    os.waitpid(pid, 0)\n"
        "print('parent' if pid else 'child')"
    )
    assert result.status is CellStatus.OK and not result.state_lost
    assert sorted(result.stdout.split()) == ["child", "parent"]
    assert ok(interp, "kept, pid > 0") == "(7, True)\n"  # the parent's namespace answers


def test_a_huge_exception_message_is_capped(interp: PersistentInterpreter) -> None:
    result = interp.run("raise ValueError('v' * 10_000_000)")
    assert result.status is CellStatus.ERROR
    assert len(result.traceback) < LIMITS.stderr_bytes + 100
    assert result.traceback.startswith("Traceback") and "truncated" in result.traceback


def test_an_interpreter_that_dies_between_calls_is_restarted_and_says_so(
    interp: PersistentInterpreter,
) -> None:
    ok(interp, "import os, threading, time\nthreading.Timer(0.2, os._exit, (1,)).start()")
    deadline = time.monotonic() + 10
    while interp.alive and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not interp.alive
    result = interp.run("'fresh'")
    assert result.status is CellStatus.OK and result.restarted and result.stdout == "'fresh'\n"


def test_calls_from_two_threads_run_one_at_a_time(interp: PersistentInterpreter) -> None:
    ok(interp, "import time\nlog = []")
    code = "log.append('in'); time.sleep(0.3); log.append('out')"
    threads = [threading.Thread(target=interp.run, args=(code,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert ok(interp, "log") == "['in', 'out', 'in', 'out']\n"


def test_a_fork_bomb_is_contained_and_the_host_is_fine(interp: PersistentInterpreter) -> None:
    result = interp.run(
        "import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
        "            import time; time.sleep(30)\n        n += 1\n"
        "except OSError as e:\n    print('fork failed after', n)\n"
    )
    assert result.status is CellStatus.OK, result
    assert result.stdout.startswith("fork failed after")
    assert int(result.stdout.split()[3]) < LIMITS.max_processes
    assert ok(interp, "n > 0") == "True\n"
    host = subprocess.run(["/bin/echo", "host"], capture_output=True, check=True, timeout=10)
    assert host.stdout == b"host\n"


def test_a_memory_hog_is_reported_memory(interp: PersistentInterpreter) -> None:
    result = interp.run("hog = bytearray(2 * 1024**3)")
    assert result.status is CellStatus.MEMORY, result
    assert result.state_lost  # the kernel's OOM killer took the interpreter
    after = interp.run("'after'")
    assert after.stdout == "'after'\n" and after.restarted


def test_an_oom_kill_of_a_child_is_that_call_s_alone(interp: PersistentInterpreter) -> None:
    """The cgroup's OOM counter only grows: the calls after the one whose child the kernel
    killed must not read as out of memory."""
    code = (
        "import subprocess, sys\n"
        "r = subprocess.run([sys.executable, '-c', 'b = bytearray(2 * 1024**3)'])\n"
        "r.returncode"
    )
    hog = interp.run(code)
    assert hog.status is CellStatus.MEMORY and "a process of the call" in hog.message, hog
    assert hog.stdout == "-9\n" and not hog.state_lost, hog  # the child, not the interpreter
    after = interp.run("r.returncode + 9")
    assert after.status is CellStatus.OK and after.stdout == "0\n", after


def test_lone_surrogates_in_code_and_output_are_text_for_the_model(
    interp: PersistentInterpreter,
) -> None:
    bad = interp.run("print('\ud800')")  # JSON can carry one; no UTF-8 source can
    assert bad.status is CellStatus.ERROR and not bad.state_lost, bad
    assert "lone surrogate" in bad.traceback and "_compile" not in bad.traceback, bad
    made = interp.run("s = chr(0xD800) + 'ok'; print(s); s")
    assert made.status is CellStatus.OK and "ok" in made.stdout, made
    made.stdout.encode("utf-8")  # what is sent back is valid UTF-8


def test_processes_started_in_a_call_are_gone_in_the_next(interp: PersistentInterpreter) -> None:
    ok(
        interp,
        "import os, subprocess\n"
        "sleeper = subprocess.Popen(['sleep', '1000'])\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.execv('/bin/sleep', ['sleep', '1000'])\n"
        "    os._exit(0)\n"
        "started = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
        "None",
    )
    assert eval(ok(interp, "len(started)")) >= 4  # init, this interpreter, two sleeps
    left = ok(interp, "sorted(int(p) for p in os.listdir('/proc') if p.isdigit())")
    assert eval(left) == [1, eval(ok(interp, "os.getpid()"))]
    assert ok(interp, "sleeper.poll() is not None") == "True\n"  # reaped by the supervisor


def test_ten_megabytes_of_output_are_capped(interp: PersistentInterpreter) -> None:
    result = interp.run("import sys\nprint('x' * 10_000_000)\nsys.stderr.write('e' * 10_000_000)")
    assert result.status is CellStatus.OK
    assert result.stdout_truncated and result.stderr_truncated
    assert result.stdout == "x" * LIMITS.output_bytes
    assert result.stderr == "e" * LIMITS.stderr_bytes
    small = interp.run("print('small')")
    assert small.stdout == "small\n" and not small.stdout_truncated


@pytest.fixture()
def host_listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    yield server.getsockname()[1]
    server.close()


def test_the_network_is_unreachable(interp: PersistentInterpreter, host_listener: int) -> None:
    with socket.create_connection(("127.0.0.1", host_listener), timeout=2):
        pass  # reachable from the host
    shown = ok(
        interp,
        "import socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {host_listener}), timeout=2)\n"
        "    outcome = 'CONNECTED'\n"
        "except OSError as exc:\n"
        "    outcome = type(exc).__name__\n"
        "outcome",
    )
    assert shown in ("'ConnectionRefusedError'\n", "'OSError'\n")


def test_two_interpreters_see_nothing_of_each_other(backend: BwrapBackend) -> None:
    with (
        PersistentInterpreter(backend, LIMITS) as a,
        PersistentInterpreter(backend, LIMITS) as b,
    ):
        ok(
            a,
            "secret = 's3'\nopen('/tmp/a.txt', 'w').write('a')\n"
            "open('/work/a.txt', 'w').write('a')",
        )
        ok(b, "import os")
        assert ok(b, "sorted(os.listdir('/tmp')) + sorted(os.listdir('/work'))") == "[]\n"
        assert interp_pids(b) == [1, eval(ok(b, "os.getpid()"))]
        assert b.run("secret").status is CellStatus.ERROR
        assert ok(a, "open('/work/a.txt').read() + secret") == "'as3'\n"  # files stay
        assert a._supervisor_pid != b._supervisor_pid


def interp_pids(interp: PersistentInterpreter) -> list[int]:
    return list(eval(ok(interp, "sorted(int(p) for p in os.listdir('/proc') if p.isdigit())")))


def test_close_leaves_no_process_and_no_cgroup(backend: BwrapBackend) -> None:
    interp = PersistentInterpreter(backend, LIMITS)
    ok(interp, "import subprocess\np = subprocess.Popen(['sleep', '1000'])")
    sandbox = interp._sandbox
    assert sandbox is not None and sandbox.cgroup is not None
    cgroup_dirs = [Path(d) for d in getattr(sandbox.cgroup, "dirs", {}).values()]
    cgroup_dirs += [Path(p) for p in [getattr(sandbox.cgroup, "path", None)] if p is not None]
    supervisor = interp._supervisor_pid
    assert supervisor is not None and Path(f"/proc/{supervisor}").exists()
    assert all(d.exists() for d in cgroup_dirs) and cgroup_dirs
    interp.close()
    assert not any(d.exists() for d in cgroup_dirs)
    deadline = time.monotonic() + 2.0
    while _alive(supervisor) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(supervisor)
    result = interp.run("1")
    assert result.status is CellStatus.CLOSED
    interp.close()  # a second close is harmless


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_close_from_another_thread_ends_a_running_call(backend: BwrapBackend) -> None:
    interp = PersistentInterpreter(backend, replace(LIMITS, wall_time_s=30.0))
    ok(interp, "import time")
    closer = threading.Timer(0.5, interp.close)
    closer.start()
    result = interp.run("time.sleep(20)")
    closer.join()
    assert result.status is CellStatus.CLOSED
    assert result.wall_s < 20


def test_the_per_call_cpu_limit_interrupts(backend: BwrapBackend) -> None:
    limits = InterpreterLimits(wall_time_s=20.0, cpu_time_s=1.0, interrupt_grace_s=1.0)
    with PersistentInterpreter(backend, limits) as interp:
        ok(interp, "kept = 'yes'")
        result = interp.run("while True:\n    pass")
        assert result.status is CellStatus.CPU_LIMIT and not result.state_lost
        assert result.cpu_s is not None and result.cpu_s >= 1.0
        assert ok(interp, "kept") == "'yes'\n"


def test_the_total_cpu_budget_ends_the_session(backend: BwrapBackend) -> None:
    limits = InterpreterLimits(wall_time_s=1.0, total_cpu_time_s=2.5, interrupt_grace_s=1.0)
    with PersistentInterpreter(backend, limits) as interp:
        statuses = []
        for _ in range(6):
            result = interp.run("while True:\n    pass")
            statuses.append(result.status)
            if result.status is CellStatus.CPU_LIMIT:
                break
        assert statuses[:-1] == [CellStatus.TIMEOUT] * (len(statuses) - 1)
        assert statuses[-1] is CellStatus.CPU_LIMIT and result.state_lost
        assert result.total_cpu_s is not None and result.total_cpu_s > 2.5
        after = interp.run("1")
        assert after.status is CellStatus.CPU_LIMIT and after.stdout == ""
        assert not interp.alive


def test_the_supervisor_refuses_to_run_outside_a_sandbox() -> None:
    """It kills every process it may signal after each cell: started here (a host pid, root
    when the suite runs as root) it must exit before serving anything."""
    python = get_language("python").run_argv("x", LIMITS.sandbox_limits())[0]
    done = subprocess.run(
        [python, "-I", "-S", "-B", "-c", supervisor_source("interpreter_supervisor.py")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 70, done
    assert done.stdout == b""
    assert b"only runs as a sandbox's first process" in done.stderr
