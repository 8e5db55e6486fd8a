"""Hostile programs in the real bubblewrap backend: each must be contained, and nothing it
started may outlive its run (``no_leftovers`` checks for surviving processes and cgroups)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fork_bombs import assert_bash_fork_bomb_contained, assert_python_fork_bomb_hits_pids_limit
from python_runs import py, py_ok

from referee.sandbox import BwrapBackend, Limits, RunStatus

pytestmark = pytest.mark.usefixtures("no_leftovers")


@pytest.fixture()
def host_listener() -> Iterator[int]:
    """A TCP server on the host's loopback; the sandbox must not reach it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    yield server.getsockname()[1]
    server.close()


def test_fork_bomb_is_contained(backend: BwrapBackend) -> None:
    assert_bash_fork_bomb_contained(backend, within_s=10)


def test_python_fork_bomb_hits_pids_limit(backend: BwrapBackend) -> None:
    assert_python_fork_bomb_hits_pids_limit(backend)


def test_double_forked_daemon_does_not_survive(backend: BwrapBackend, tmp_path: Path) -> None:
    source = (
        "import os, time, sys\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        os.close(1); os.close(2)\n"
        "        os.execv('/bin/sleep', ['referee-leak-canary', '30'])\n"
        "    os._exit(0)\n"
        "print('parent done')\n"
    )
    started = time.monotonic()
    py_ok(backend, source, stdout="parent done\n")
    assert time.monotonic() - started < 4  # the run did not wait for the daemon
    # no_leftovers then checks that no `referee-leak-canary` process is alive


def test_no_network_not_even_host_loopback(backend: BwrapBackend, host_listener: int) -> None:
    with socket.create_connection(("127.0.0.1", host_listener), timeout=2):
        pass  # reachable from the host
    source = (
        "import socket\n"
        f"for port in ({host_listener}, 6379):\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', port), timeout=2)\n"
        "        print('CONNECTED', port)\n"
        "    except OSError as e:\n"
        "        print('refused', port)\n"
        "try:\n"
        "    socket.create_connection(('10.0.0.1', 80), timeout=2)\n"
        "    print('CONNECTED outside')\n"
        "except OSError:\n"
        "    print('unreachable')\n"
    )
    result = py_ok(backend, source)
    assert "CONNECTED" not in result.stdout
    assert result.stdout.count("refused") == 2 and "unreachable" in result.stdout


def test_host_files_and_environment_are_hidden(backend: BwrapBackend) -> None:
    os.environ["REFEREE_TEST_SECRET"] = "hunter2"
    try:
        source = (
            "import os\n"
            "for path in ('/root/.bashrc', '/etc/shadow', '/etc/passwd', '/proc/1/environ',"
            " '/work/../root/.gitconfig', '/sys/fs/cgroup'):\n"
            "    try:\n"
            "        open(path).read(); print('READ', path)\n"
            "    except OSError as e:\n"
            "        print('denied', path)\n"
            "print('SECRET' if any('hunter2' in v for v in os.environ.values()) else 'clean')\n"
            "print(sorted(os.listdir('/root')))\n"
        )
        result = py_ok(backend, source)
    finally:
        del os.environ["REFEREE_TEST_SECRET"]
    assert "READ" not in result.stdout.replace("READ /proc/1/environ", "")
    assert "clean" in result.stdout
    assert "['.pyenv']" in result.stdout or "[]" in result.stdout


def test_writes_outside_the_work_dir_fail(backend: BwrapBackend) -> None:
    source = (
        "import os\n"
        "for path in ('/usr/evil', '/code/evil', '/evil', '/etc/evil', '/root/evil',"
        " '/proc/sys/kernel/hostname'):\n"
        "    try:\n"
        "        open(path, 'w').write('x'); print('WROTE', path)\n"
        "    except OSError:\n"
        "        print('denied', path)\n"
        "for path in ('/work/ok', '/tmp/ok', '/dev/shm/ok'):\n"
        "    open(path, 'w').write('x'); print('ok', path)\n"
    )
    result = py_ok(backend, source)
    assert "WROTE" not in result.stdout
    assert result.stdout.count("ok /") == 3
    assert not Path("/usr/evil").exists() and not Path("/evil").exists()


def test_disk_filling_is_bounded(backend: BwrapBackend) -> None:
    source = (
        "import os\nn = 0\ntry:\n    with open('/work/fill', 'wb') as f:\n"
        "        while True:\n            f.write(b'x' * (1 << 20)); f.flush(); n += 1\n"
        "except OSError as e:\n    print('stopped at', n, 'MiB', e.errno)\n"
    )
    result = py(backend, source, limits=Limits(work_dir_mb=16, memory_mb=256))
    assert result.status in (RunStatus.OK, RunStatus.RUNTIME_ERROR, RunStatus.MEMORY_LIMIT)
    if result.status is RunStatus.OK:
        assert int(result.stdout.split()[2]) <= 16


def test_tmp_and_shm_do_not_leak_between_runs(backend: BwrapBackend) -> None:
    py_ok(
        backend,
        "for p in ('/tmp/leak', '/dev/shm/leak', '/work/leak'):\n"
        "    open(p, 'w').write('secret')\nprint('written')",
        stdout="written\n",
    )
    py_ok(
        backend,
        "import os\nprint([p for p in ('/tmp/leak', '/dev/shm/leak',"
        " '/work/leak') if os.path.exists(p)])",
        stdout="[]\n",
    )


def test_seccomp_blocks_ptrace_mount_unshare_keyring_clock(backend: BwrapBackend) -> None:
    source = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def check(name, rc):\n"
        "    print(name, 'blocked' if rc == -1 else 'ALLOWED', ctypes.get_errno())\n"
        "check('ptrace', libc.ptrace(0, 0, None, None))\n"  # PTRACE_TRACEME
        "check('unshare_user', libc.unshare(0x10000000))\n"
        "check('unshare_net', libc.unshare(0x40000000))\n"
        "check('mount', libc.mount(b'none', b'/work', b'tmpfs', 0, None))\n"
        "check('keyctl', libc.syscall(250, 0, 0, 0, 0, 0))\n"  # keyctl(KEYCTL_GET_KEYRING_ID)
        "ts = (ctypes.c_long * 2)(0, 0)\n"
        "check('clock_settime', libc.clock_settime(0, ts))\n"
        "check('personality', libc.personality(0x0040000))\n"  # ADDR_NO_RANDOMIZE
    )
    result = py_ok(backend, source)
    lines = result.stdout.splitlines()
    assert len(lines) == 7
    assert all(" blocked " in line for line in lines), result.stdout
    child = py(
        backend,
        "import subprocess\nr = subprocess.run(['unshare', '-r', 'true'],"
        " capture_output=True)\nprint(r.returncode)",
    )
    assert child.stdout.strip() != "0"


def test_cannot_raise_rlimits_or_kill_the_host(backend: BwrapBackend) -> None:
    source = (
        "import os, resource, signal\n"
        "try:\n"
        "    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY,) * 2)\n"
        "    print('RAISED')\n"
        "except (ValueError, OSError):\n"
        "    print('rlimit kept')\n"
        f"for pid in ({os.getpid()}, {os.getppid()}):\n"
        "    try:\n"
        "        os.kill(pid, signal.SIGKILL); print('killed', pid)\n"
        "    except OSError:\n"
        "        print('no such process', pid)\n"
        "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit())[:3])\n"
    )
    result = py_ok(backend, source)
    assert "rlimit kept" in result.stdout
    assert "[1, 2]" in result.stdout  # only the sandbox's own pid namespace is visible
    assert os.getpid() > 0  # this test process is still alive


def test_kill_all_in_namespace_is_harmless(backend: BwrapBackend) -> None:
    result = py(backend, "import os, signal\nos.kill(-1, signal.SIGKILL)\nprint('survived')")
    assert result.status in (RunStatus.OK, RunStatus.RUNTIME_ERROR)
