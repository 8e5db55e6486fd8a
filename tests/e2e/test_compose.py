"""The distributed stack end to end: the images built here (docker/build-images.sh: dockerd,
a debootstrapped base, no registry), ``docker compose up -d`` with host networking, then the SDK
against it: math rewards, sandboxed programs (on the sandbox node, in bubblewrap, inside its
container), a PRM job on a Celery worker (a tiny random transformers policy built in the
worker), two workers sharing jobs, a worker container killed mid-job, ``docker compose down -v``.

Not part of the default run (marker ``e2e``): ``pytest -m e2e tests/e2e``. Needs root (dockerd,
debootstrap); a cold build takes minutes (see docs/compose.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prm_rows import prm_items

from referee.client import JobState, RefereeClient, Unauthorized
from referee.services.launcher import free_ports

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3600)]

ROOT = Path(__file__).resolve().parents[2]
PROJECT = f"referee-e2e-{os.getpid()}"
API_KEY = "e2e-api-key"
ADD_CPP = (
    "#include <iostream>\nint main() { long a, b; std::cin >> a >> b; "
    "std::cout << a + b << std::endl; }\n"
)


CPP_ITEM = {
    "id": "cpp",
    "response": f"```cpp\n{ADD_CPP}```",
    "grader": {
        "type": "code",
        "language": "cpp",
        "tests": [{"stdin": "1 2\n", "stdout": "3\n"}, {"stdin": "40 2\n", "stdout": "41\n"}],
    },
}


def _compose_cli() -> list[str]:
    """``docker compose`` (v2 plugin) or Debian's ``docker-compose`` (build-images.sh installs
    one of them)."""
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    if probe.returncode == 0:
        return ["docker", "compose"]
    found = shutil.which("docker-compose")
    assert found, "neither `docker compose` nor docker-compose is installed"
    return [found]


@dataclass
class Stack:
    env: dict[str, str]
    url: str
    compose_cli: list[str] = field(default_factory=list)

    def compose(self, *args: str, timeout: float = 600) -> str:
        cmd = [
            *self.compose_cli,
            "-p",
            PROJECT,
            "-f",
            "docker-compose.yml",
            "-f",
            "docker-compose.host.yml",
            *args,
        ]
        out = subprocess.run(
            cmd, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        assert out.returncode == 0, f"{' '.join(cmd)}:\n{out.stdout}\n{out.stderr}"
        return out.stdout

    def containers(self, service: str) -> list[str]:
        """Ids of the service's containers (running or not)."""
        out = subprocess.run(
            [
                "docker",
                "ps",
                "-aq",
                "--no-trunc",
                "--filter",
                f"label=com.docker.compose.project={PROJECT}",
                "--filter",
                f"label=com.docker.compose.service={service}",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.split()

    def inspect(self, container: str) -> dict[str, Any]:
        out = subprocess.run(
            ["docker", "inspect", container], capture_output=True, text=True, check=True
        )
        info: dict[str, Any] = json.loads(out.stdout)[0]
        return info

    def wait_healthy(self, services: dict[str, int], timeout_s: float = 600) -> None:
        """Until each service has that many containers, all running and healthy."""
        deadline = time.monotonic() + timeout_s
        states: dict[str, list[str]] = {}
        while time.monotonic() < deadline:
            states = {}
            for service in services:
                states[service] = []
                for cid in self.containers(service):
                    state = self.inspect(cid)["State"]
                    health = state.get("Health", {}).get("Status", "none")
                    states[service].append(f"{state['Status']}/{health}")
            if all(
                len(states[s]) == n and all(x == "running/healthy" for x in states[s])
                for s, n in services.items()
            ):
                return
            time.sleep(2)
        logs = self.compose("logs", "--tail", "40")
        raise AssertionError(f"the stack did not become healthy: {states}\n{logs}")

    def worker_name(self, container: str) -> str:
        """The name docker/entrypoint.sh gives the worker of a container."""
        return f"worker-{container[:12]}"


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    assert os.geteuid() == 0, "the e2e test builds images and runs dockerd: run it as root"
    start = time.monotonic()
    build = subprocess.run(
        ["bash", "docker/build-images.sh"], cwd=ROOT, capture_output=True, text=True, timeout=3000
    )
    assert build.returncode == 0, f"build-images.sh failed:\n{build.stdout}\n{build.stderr}"
    print(build.stdout)
    api_port, sandbox_port, redis_port = free_ports(3)
    env = {
        **os.environ,
        "REFEREE_API_PORT": str(api_port),
        "REFEREE_SANDBOX_PORT": str(sandbox_port),
        "REFEREE_REDIS_PORT": str(redis_port),
        "REFEREE_REDIS_IMAGE": "referee-redis:latest",
        "REFEREE_API_KEYS": API_KEY,
        "REFEREE_SANDBOX_API_KEY": "e2e-sandbox-key",
        "REFEREE_API_WORKERS": "2",
        "REFEREE_MATH_WORKERS": "1",
        "REFEREE_SANDBOX_SLOTS": "2",
        "REFEREE_POLICY_BACKEND": "transformers",
        "REFEREE_POLICY_MODEL": "tiny-random",
        "REFEREE_JOB_LEASE_S": "5",
        "REFEREE_LOG_LEVEL": "warning",
    }
    s = Stack(env=env, url=f"http://127.0.0.1:{api_port}", compose_cli=_compose_cli())
    try:
        s.compose("up", "-d")
        s.wait_healthy({"api": 1, "sandbox": 1, "worker": 1, "redis": 1})
        print(f"[e2e] images built and stack healthy in {time.monotonic() - start:.0f} s")
        yield s
    finally:
        s.compose("down", "-v", "--remove-orphans")
        assert s.containers("worker") == s.containers("api") == []
        volumes = subprocess.run(
            [
                "docker",
                "volume",
                "ls",
                "-q",
                "--filter",
                f"label=com.docker.compose.project={PROJECT}",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert volumes == []


def client(stack: Stack) -> RefereeClient:
    return RefereeClient(stack.url, api_key=API_KEY, timeout=600)


def test_the_api_wants_its_key(stack: Stack) -> None:
    with RefereeClient(stack.url, api_key="wrong") as c, pytest.raises(Unauthorized):
        c.rewards([{"id": "a", "response": "1", "grader": {"type": "math", "reference": "1"}}])


def test_math_rewards(stack: Stack) -> None:
    items = [
        {
            "id": "half",
            "response": "So $\\boxed{\\frac{1}{2}}$.",
            "grader": {"type": "math", "reference": "0.5"},
        },
        {"id": "wrong", "response": "\\boxed{3}", "grader": {"type": "math", "reference": "4"}},
        {
            "id": "set",
            "response": "\\boxed{\\{1, 2\\}}",
            "grader": {"type": "math", "reference": "\\{2, 1\\}"},
        },
    ]
    with client(stack) as c:
        out = c.rewards(items)
    assert [r.score for r in out.rewards] == [1.0, 0.0, 1.0]


def test_procedural_problems_and_their_rewards(stack: Stack) -> None:
    """reasoning-gym is in the server image: problems generated by the api, scored by its own
    scorer in the api's check pool, and the curriculum fed."""
    with client(stack) as c:
        batch = c.problems("basic_arithmetic", 3, seed=5)
        items = [
            {"id": f"{p.index}-{k}", "response": f"<answer>{a}</answer>", "grader": p.grader}
            for p in batch.problems
            for k, a in (("right", p.answer), ("wrong", f"{p.answer}9"))
        ]
        scores = [r.score for r in c.rewards(items).rewards]
        tasks = {t.task for t in c.curriculum().tasks}
    assert scores[0::2] == [1.0] * 3
    assert all(s is not None and s < 1.0 for s in scores[1::2])  # partial credit at most
    assert "basic_arithmetic" in tasks


def test_programs_run_on_the_sandbox_node_isolated(stack: Stack) -> None:
    probe = (
        "import os, socket\n"
        "print(os.getuid())\n"
        "s = socket.socket(); s.settimeout(2)\n"
        "try:\n"
        f"    s.connect(('127.0.0.1', {stack.url.rsplit(':', 1)[1]})); print('ESCAPED')\n"
        "except OSError:\n"
        "    print('no network')\n"
        "try:\n"
        "    open('/usr/escaped', 'w'); print('ESCAPED')\n"
        "except OSError:\n"
        "    print('read-only')\n"
    )
    with client(stack) as c:
        languages = c.sandbox_languages()
        cpp = c.sandbox_run(ADD_CPP, "cpp", "20 22\n")
        inside = c.sandbox_run(probe, "python")
        rewards = c.rewards([CPP_ITEM])
        hog = c.sandbox_run("x = bytearray(1 << 30)\nprint(len(x))", "python", memory_mb=128)
        forks = c.sandbox_run("import os\nwhile True:\n    os.fork()", "python", time_limit_s=2)
        after = c.sandbox_run("print('still here')", "python")
    assert languages.backend == "remote (bwrap)"
    assert {"python", "cpp", "java", "go", "rust", "javascript"} <= {
        lang.name for lang in languages.languages
    }
    assert (cpp.status, cpp.stdout) == ("ok", "42\n")
    assert inside.status == "ok", inside
    assert inside.stdout.split("\n")[:3] == ["65534", "no network", "read-only"]
    code = rewards.rewards[0]
    assert code.score == 0.5
    assert [t["outcome"] for t in code.details["tests"]] == ["passed", "wrong_answer"]
    assert hog.status == "memory_limit", hog
    assert forks.status != "ok" and after.stdout == "still here\n"  # the node survives both


SYSCALLS = """
import ctypes, os, platform
libc = ctypes.CDLL(None, use_errno=True)
numbers = {"x86_64": (321, 308, 101), "aarch64": (280, 268, 117)}[platform.machine()]
for name, nr in zip(("bpf", "setns", "ptrace"), numbers):
    r = libc.syscall(nr, 0, 0, 0, 0)
    print(name, os.strerror(ctypes.get_errno()) if r < 0 else "allowed")
"""


def test_the_sandbox_container_is_not_privileged(stack: Stack) -> None:
    """Its privileges are the listed capabilities and a seccomp profile that keeps bpf, setns
    and ptrace closed even to its root; the api and the workers have none and are not root."""
    (sandbox,) = stack.containers("sandbox")
    host = stack.inspect(sandbox)["HostConfig"]
    assert host["Privileged"] is False
    assert any(opt.startswith("seccomp=") for opt in host["SecurityOpt"])
    assert set(host["CapDrop"]) == {"ALL"} and "SYS_ADMIN" in host["CapAdd"]
    probe = subprocess.run(
        ["docker", "exec", sandbox, "python3", "-c", SYSCALLS],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.split("\n")[:3] == [
        "bpf Operation not permitted",
        "setns Operation not permitted",
        "ptrace Operation not permitted",
    ]
    for service in ("api", "worker"):
        (cid,) = stack.containers(service)
        host = stack.inspect(cid)["HostConfig"]
        assert host["CapDrop"] == ["ALL"] and not host["CapAdd"], service
        uid = subprocess.run(
            ["docker", "exec", cid, "id", "-u"], capture_output=True, text=True, check=True
        )
        assert uid.stdout.strip() != "0", service


def test_a_prm_job_runs_on_a_celery_worker(stack: Stack) -> None:
    """PRM rollouts from the worker's in-process policy, and a code item the worker forwards
    to the sandbox node, in one job."""
    (worker,) = stack.containers("worker")
    with client(stack) as c:
        done = c.wait(c.submit([*prm_items(3, "p", rollouts=4), CPP_ITEM]), timeout_s=600)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.worker is not None and done.worker.startswith(stack.worker_name(worker) + ":")
    assert done.result is not None
    *prm, code = done.result.rewards
    assert [r.details["outcome"] for r in prm] == ["prm"] * 3
    assert all(len(r.details["steps"]) == 4 for r in prm)
    assert code.score == 0.5 and code.details["compile"]["status"] == "ok"


def test_two_workers_both_take_jobs(stack: Stack) -> None:
    stack.compose("up", "-d", "--no-recreate", "--scale", "worker=2")
    stack.wait_healthy({"worker": 2})
    names = {stack.worker_name(cid) for cid in stack.containers("worker")}
    assert len(names) == 2

    def one(i: int) -> str:
        item = {
            "id": "x",
            "response": f"\\boxed{{{i}}}",
            "grader": {"type": "math", "reference": str(i)},
        }
        with client(stack) as c:
            return c.submit([item]).id

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(one, range(60)))
    seen = set()
    with client(stack) as c:
        for job_id in ids:
            done = c.wait(job_id, poll_s=0.2, timeout_s=600)
            assert done.state is JobState.SUCCEEDED, (job_id, done.error)
            assert done.result is not None and done.result.rewards[0].score == 1.0
            seen.add(str(done.worker).split(":")[0])
    assert seen == names


def test_a_worker_container_killed_mid_job_loses_nothing(stack: Stack) -> None:
    with client(stack) as c:
        job = c.submit(prm_items(16, "k"), chunk_size=1)
        deadline = time.monotonic() + 600
        running = c.job(job.id)
        while not (running.progress.done >= 2 and running.worker) and time.monotonic() < deadline:
            time.sleep(0.2)
            running = c.job(job.id)
        assert running.worker and not running.state.finished, running
        by_name = {stack.worker_name(cid): cid for cid in stack.containers("worker")}
        victim = by_name[running.worker.split(":")[0]]
        subprocess.run(["docker", "kill", victim], check=True, capture_output=True)
        done = c.wait(job.id, timeout_s=900)
    assert done.state is JobState.SUCCEEDED, done.error
    assert done.attempts >= 2
    assert done.progress.done == done.progress.total == 16
    assert done.result is not None
    assert [r.id for r in done.result.rewards] == [f"k{i}" for i in range(16)]
    assert all(r.details["outcome"] == "prm" for r in done.result.rewards)
    # compose brings the killed worker back (restart: unless-stopped, or `up` again)
    stack.compose("up", "-d", "--no-recreate", "--scale", "worker=2")
    stack.wait_healthy({"worker": 2})


def test_redis_keeps_its_data_on_a_volume(stack: Stack) -> None:
    with client(stack) as c:
        job = c.wait(
            c.submit(
                [
                    {
                        "id": "a",
                        "response": "\\boxed{7}",
                        "grader": {"type": "math", "reference": "7"},
                    }
                ]
            ),
            timeout_s=300,
        )
        stack.compose("restart", "redis")
        stack.wait_healthy({"redis": 1})
        again = c.job(job.id)
    assert again.state is JobState.SUCCEEDED
    assert again.result is not None and again.result.rewards[0].score == 1.0
