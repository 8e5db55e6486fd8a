"""One sandbox per program (``ProgramSession``): each test its own process, and nothing a hostile
test does reaches a later test of the same program. Each case runs a "plant" test that leaves
state behind (files, processes, signals, shared memory, memory exhaustion) and then "check"
tests that look for it; every check must find a clean sandbox, and the outcomes must equal
those of one sandbox per test (``REFEREE_SANDBOX_PER_TEST=1``)."""

from __future__ import annotations

import pytest

from referee.sandbox import BwrapBackend, Limits, RunStatus
from referee.sandbox.harness import StdioTest, TestOutcome, run_tests
from referee.sandbox.programs import prepare

pytestmark = pytest.mark.usefixtures("no_leftovers")

LIMITS = Limits(wall_time_s=2.0, memory_mb=128, max_processes=32)

# Dispatches on the first word of stdin. "check" prints what survived of earlier tests.
HOSTILE = r"""
import ctypes, os, signal, subprocess, sys, time
mode = sys.stdin.read().split()[0]
libc = ctypes.CDLL(None, use_errno=True)
if mode == "files":
    for d in ("/work", "/tmp", "/dev/shm"):
        open(d + "/left-behind", "w").write("x")
        os.makedirs(d + "/locked/deep")
        open(d + "/locked/deep/f", "w").write("x")
        os.chmod(d + "/locked", 0)
    print("ok")
elif mode == "daemon":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.close(0); os.close(1); os.close(2)
            while True:
                with open("/work/daemon-was-here", "w") as f:
                    f.write("x")
                time.sleep(0.005)
        os._exit(0)
    time.sleep(0.05)
    print("ok")
elif mode == "signals":
    os.kill(os.getppid(), signal.SIGKILL)  # in a batch: its supervisor; else bwrap's init
    print("ok")
elif mode == "stop":
    os.kill(os.getppid(), signal.SIGSTOP)
    print("ok")
elif mode == "shm":
    ident = libc.shmget(4242, 4096, 0o1600)  # IPC_CREAT | 0600
    libc.msgget(4243, 0o1600)
    libc.semget(4244, 1, 0o1600)
    print("ok" if ident >= 0 else "shmget failed")
elif mode == "memory":
    hog = bytearray(512 * 1024 * 1024)
    print("survived")
elif mode == "check":
    others = sorted(
        int(p) for p in os.listdir("/proc")
        if p.isdigit() and int(p) not in (1, os.getpid(), os.getppid())
    )
    files = sorted(n for d in ("/work", "/tmp", "/dev/shm") for n in os.listdir(d))
    ipc = [libc.shmget(4242, 0, 0), libc.msgget(4243, 0), libc.semget(4244, 0, 0)]
    print("procs", others, "files", files, "ipc", ipc)
"""
CLEAN = "procs [] files [] ipc [-1, -1, -1]\n"


def _session_outcomes(backend: BwrapBackend, stdins: list[str]) -> tuple[list[str], int]:
    with prepare(HOSTILE, "python", backend) as program, program.session() as session:
        runs = [session.run(s, LIMITS) for s in stdins]
        return [f"{r.status.value}:{r.stdout}" for r in runs], session.batched_runs


@pytest.mark.parametrize("plant", ["files", "daemon", "shm"])
def test_a_test_leaves_nothing_for_the_next(backend: BwrapBackend, plant: str) -> None:
    outcomes, batched = _session_outcomes(backend, ["check", plant, "check", "check"])
    assert outcomes == [f"ok:{CLEAN}", "ok:ok\n", f"ok:{CLEAN}", f"ok:{CLEAN}"]
    assert batched == 4  # all in the one sandbox: cleaning, not a fresh sandbox, did this


@pytest.mark.parametrize("plant", ["signals", "stop"])
def test_killing_or_stopping_the_supervisor_changes_no_outcome(
    backend: BwrapBackend, plant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    stdins = ["check", plant, "check"]
    outcomes, batched = _session_outcomes(backend, stdins)
    assert outcomes[0] == outcomes[2] == f"ok:{CLEAN}"
    assert batched == 2  # the test that hit the supervisor was rerun in a sandbox of its own
    monkeypatch.setenv("REFEREE_SANDBOX_PER_TEST", "1")
    assert _session_outcomes(backend, stdins) == (outcomes, 0)


def test_memory_exhaustion_fails_alone(backend: BwrapBackend) -> None:
    outcomes, _ = _session_outcomes(backend, ["check", "memory", "check"])
    assert outcomes[0] == outcomes[2] == f"ok:{CLEAN}"
    assert outcomes[1].startswith("memory_limit:")


def test_posix_message_queues_are_refused(backend: BwrapBackend) -> None:
    source = (
        "import ctypes, os\n"
        "rt = ctypes.CDLL('librt.so.1', use_errno=True)\n"
        "fd = rt.mq_open(b'/q', os.O_CREAT | os.O_RDWR, 0o600, None)\n"
        "print(fd, os.strerror(ctypes.get_errno()))\n"
    )
    with prepare(source, "python", backend) as program, program.session() as session:
        result = session.run("", LIMITS)
    assert result.status is RunStatus.OK
    assert result.stdout == "-1 Operation not permitted\n"


# A program that shows what a fresh interpreter would: its name, argv, stdio settings,
# builtins from `site`, a clean sys.modules["__main__"], and stdin bytes as read.
PROBE = r"""
import sys
data = sys.stdin.read()
print(__name__, sys.argv, repr(data), sys.stdout.encoding, sys.stdin.errors,
      sys.stderr.errors, sys.stderr.line_buffering, callable(exit), callable(quit),
      sorted(k for k in vars(sys.modules["__main__"]) if not k.startswith("__")))
counter = globals().setdefault("counter", [])
counter.append(1)
print(len(counter))
if data.startswith("exit"):
    exit(int(data.split()[1]))
if data.startswith("raise"):
    raise ValueError("boom")
"""


def test_a_forked_test_sees_a_fresh_interpreter(
    backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    stdins = ["a\r\nb\n", "exit 3", "raise", "caf\u00e9"]

    def outcomes() -> list[tuple[str, str, int | None, bool]]:
        with prepare(PROBE, "python", backend) as program, program.session() as session:
            runs = [session.run(s, LIMITS) for s in stdins]
        return [
            (r.status.value, r.stdout, r.exit_code, "ValueError: boom" in r.stderr) for r in runs
        ]

    batched = outcomes()
    monkeypatch.setenv("REFEREE_SANDBOX_PER_TEST", "1")
    assert batched == outcomes()
    assert batched[1][0] == "runtime_error" and batched[1][2] == 3
    assert batched[2][0] == "runtime_error" and batched[2][3]
    assert "'a\\r\\nb\\n'" in batched[0][1]


# What of the preloaded modules a run finds imported when it starts, and whether a run's
# change to one of them is seen by the next run.
PRELOAD_PROBE = r"""
import sys
print(sorted(m for m in ("json", "re", "traceback") if m in sys.modules))
import json
print(getattr(json, "planted", None))
json.planted = "left by an earlier run"
"""


def test_preloaded_modules_are_imported_once_and_each_run_still_forks_fresh(
    backend: BwrapBackend,
) -> None:
    """A session's ``preload`` (the python grader's driver: json and friends) is imported by the
    supervisor before the runs fork: each run finds it imported, and what a run does to it
    stays in that run. Without ``preload`` a run finds none of it, as a fresh interpreter."""
    with prepare(PRELOAD_PROBE, "python", backend) as program:
        with program.session(("json", "traceback", "no_such_module")) as session:
            runs = [session.run("", LIMITS) for _ in range(3)]
            assert session.batched_runs == 3
        assert [r.stdout for r in runs] == ["['json', 're', 'traceback']\nNone\n"] * 3
        with program.session() as session:
            fresh = session.run("", LIMITS)
        assert fresh.stdout == "[]\nNone\n"


def test_run_tests_per_test_limits_and_stdin_in_one_sandbox(backend: BwrapBackend) -> None:
    source = (
        "import sys\n"
        "n = int(sys.stdin.readline())\n"
        "if n < 0:\n"
        "    while True: pass\n"
        "if n == 0:\n"
        "    sys.stdout.write('x' * 10_000)\n"
        "print(n * n)\n"
    )
    tests = [StdioTest(str(n), str(n * n)) for n in (1, 2, -1, 3, 0, 4)]
    limits = Limits(wall_time_s=1.0, memory_mb=128, output_bytes=1000)
    result = run_tests(source, "python", tests, limits, backend=backend)
    assert [t.outcome for t in result.tests] == [
        TestOutcome.PASSED,
        TestOutcome.PASSED,
        TestOutcome.TIME_LIMIT,
        TestOutcome.PASSED,
        TestOutcome.OUTPUT_LIMIT,
        TestOutcome.PASSED,
    ]


def test_compiled_program_runs_many_tests_in_one_sandbox(backend: BwrapBackend) -> None:
    source = (
        "#include <cstdio>\n#include <unistd.h>\n"
        'int main(){long n; if(scanf("%ld",&n)!=1) return 2;\n'
        'if(access("/work/mark",F_OK)==0){puts("dirty");return 0;}\n'
        'FILE*f=fopen("/work/mark","w"); if(f) fclose(f);\n'
        'printf("%ld\\n", n*3); return 0;}\n'
    )
    with prepare(source, "cpp", backend) as program, program.session() as session:
        assert program.ready, program.compile_result
        runs = [session.run(str(n), LIMITS) for n in range(5)]
        batched = session.batched_runs
    assert [r.stdout for r in runs] == [f"{n * 3}\n" for n in range(5)]
    assert batched == 5


def test_the_supervisor_refuses_to_run_outside_a_sandbox() -> None:
    """Its kill(-1) between tests must only ever reach a sandbox's processes. Started here (a
    host pid, and root when the suite runs as root) it must exit before serving; stdin is
    closed, so even a broken guard would only see the end of its input, never a test."""
    import subprocess

    from referee.sandbox.languages import get_language
    from referee.sandbox.supervised import supervisor_source

    python = get_language("python").run_argv("x", LIMITS)[0]
    source = supervisor_source("batch_supervisor.py")
    done = subprocess.run(
        [python, "-I", "-S", "-B", "-c", source],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 70, done
    assert done.stdout == b""  # no "ready": it never served
    assert b"only runs as a sandbox's first process" in done.stderr


def test_a_syntax_error_reads_as_in_a_fresh_run(
    backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    def outcome() -> tuple[str, int | None, str]:
        with prepare("print('a'\nx = (", "python", backend) as program:
            with program.session() as session:
                result = session.run("", LIMITS)
        last = result.stderr.strip().splitlines()[-1]
        return result.status.value, result.exit_code, last

    batched = outcome()
    monkeypatch.setenv("REFEREE_SANDBOX_PER_TEST", "1")
    assert batched == outcome()
    assert batched[0] == "runtime_error" and batched[2].startswith("SyntaxError")


PROC_PROBE = r"""
import os
found = []
for path in (f"/proc/{os.getppid()}/mem", f"/proc/{os.getppid()}/fd/1"):
    try:
        with open(path, "wb"):
            found.append("opened")
    except OSError as exc:
        found.append(type(exc).__name__)
print(found, len(os.listdir("/proc/self/fd")) > 0)
"""


def test_a_test_cannot_reach_the_supervisors_pipes_or_memory(backend: BwrapBackend) -> None:
    with prepare(PROC_PROBE, "python", backend) as program, program.session() as session:
        result = session.run("", LIMITS)
        assert session.batched_runs == 1
    assert result.stdout == "['PermissionError', 'PermissionError'] True\n", result


LATE_WRITER = r"""
import os, sys, time
if os.fork() == 0:
    time.sleep(0.3)
    print("late", flush=True)
    os._exit(0)
print("early", flush=True)
"""


def test_what_a_test_leaves_running_dies_with_it(
    backend: BwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in a sandbox of its own: when the test's process exits, its children die with it."""

    def outcome() -> list[str]:
        with prepare(LATE_WRITER, "python", backend) as program:
            with program.session() as session:
                return [session.run("", LIMITS).stdout for _ in range(2)]

    batched = outcome()
    monkeypatch.setenv("REFEREE_SANDBOX_PER_TEST", "1")
    assert batched == outcome() == ["early\n", "early\n"]
