"""Hostile programs through POST /v1/sandbox/run on a real server: each attack fails, the host
stays clean (no process of the sandbox user left, nothing written outside the run) and the server
stays healthy. Every program prints ESCAPED if its attack worked."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

Server = Any
NOBODY = 65534


def run(server: Server, code: str, **limits: Any) -> dict[str, Any]:
    body = {"code": code, "language": "python", "limits": {"time_s": 5, **limits}}
    resp = httpx.post(server.url + "/v1/sandbox/run", json=body, timeout=120)
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def sandbox_user_processes() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        uid_line = next((ln for ln in status.splitlines() if ln.startswith("Uid:")), "")
        state = next((ln for ln in status.splitlines() if ln.startswith("State:")), "")
        if uid_line.split()[1:2] == [str(NOBODY)] and " Z " not in state + " ":
            pids.append(int(entry.name))
    return pids


LIBC = (
    "import ctypes, ctypes.util\n"
    "libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)\n"
)

ATTACKS = {
    "memory_bomb": (
        "chunks = []\nwhile True:\n    chunks.append(bytearray(64 * 1024 * 1024))\n",
        {"memory_limit", "runtime_error"},
    ),
    "disk_fill": (
        "import os\nn = 0\ntry:\n    with open('big', 'wb') as f:\n        while True:\n"
        "            f.write(b'x' * (1 << 20))\n            n += 1\n"
        "            if n > 100000:\n                print('ESCAPED')\n"
        "except OSError:\n    print('full after', n, 'MiB')\n",
        {"ok", "runtime_error"},
    ),
    "host_files_and_env": (
        "import os\nfor path in ('/etc/shadow', '/root/.bashrc', '/proc/1/environ'):\n"
        "    try:\n        open(path).read(1); print('ESCAPED', path)\n    except OSError:\n"
        "        pass\nif any(k.startswith('REFEREE') for k in os.environ): print('ESCAPED env')\n",
        {"ok"},
    ),
    "network_to_the_server": (
        "import socket, sys\ns = socket.socket()\ns.settimeout(2)\ntry:\n"
        "    s.connect(('127.0.0.1', int(sys.argv[1]) if len(sys.argv) > 1 else PORT))\n"
        "    print('ESCAPED')\nexcept OSError as e:\n    print('no network:', e)\n",
        {"ok"},
    ),
    "kill_everything": (
        "import os, signal\nfor pid in (1, os.getppid(), -1):\n    try:\n"
        "        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\nprint('alive')\n",
        {"ok", "runtime_error"},
    ),
    "raise_rlimits": (
        "import resource\ntry:\n    resource.setrlimit(resource.RLIMIT_NPROC, "
        "(resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n    print('ESCAPED')\n"
        "except (ValueError, OSError):\n    print('refused')\n",
        {"ok"},
    ),
    "ptrace_mount_clock": (
        LIBC + "import time\nif libc.ptrace(0, 0, None, None) == 0: print('ESCAPED ptrace')\n"
        "if libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) == 0: print('ESCAPED mount')\n"
        "try:\n    time.clock_settime(time.CLOCK_REALTIME, 0); print('ESCAPED clock')\n"
        "except OSError:\n    pass\n",
        {"ok"},
    ),
    "write_outside_the_work_dir": (
        "for path in ('/usr/escaped', '/etc/escaped', '/escaped', '/home/escaped'):\n"
        "    try:\n        open(path, 'w').write('x'); print('ESCAPED', path)\n"
        "    except OSError:\n        pass\n",
        {"ok"},
    ),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_is_contained(server: Server, name: str) -> None:
    code, statuses = ATTACKS[name]
    before = set(sandbox_user_processes())  # e.g. other runs of the sandbox user elsewhere
    port = server.url.rsplit(":", 1)[1]
    out = run(server, code.replace("PORT", port), memory_mb=256)
    assert out["status"] in statuses, out
    assert "ESCAPED" not in out["stdout"], out["stdout"]
    deadline = time.monotonic() + 10  # a killed run's processes may take a moment to be reaped
    while (left := set(sandbox_user_processes()) - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, left
    for path in ("/usr/escaped", "/etc/escaped", "/escaped", "/home/escaped"):
        assert not os.path.exists(path)
    ready = httpx.get(server.url + "/readyz", timeout=30)
    assert ready.status_code == 200
    assert run(server, "print('still here')")["stdout"] == "still here\n"
