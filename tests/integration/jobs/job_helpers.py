"""Helpers shared by the job tests: a cluster of real parts (a redis-server of the test's own on
a free port, the API with ``REFEREE_BROKER_URL``, ``referee worker`` processes), and waits."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import redis

from referee.client import RefereeClient


def settle(client: RefereeClient, job_id: str, quiet_s: float = 1.5) -> Any:
    """The job's status once its progress has stopped moving for ``quiet_s``."""
    last = client.job(job_id)
    for _ in range(60):
        time.sleep(quiet_s)
        now = client.job(job_id)
        if (now.progress.done, now.progress.rollouts) == (
            last.progress.done,
            last.progress.rollouts,
        ):
            return now
        last = now
    raise AssertionError(f"job {job_id} kept working after it was cancelled")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    def __init__(self, tmp: Path, server_factory: Any) -> None:
        self.tmp = tmp
        self.redis_port = free_port()
        self.redis_proc: subprocess.Popen[bytes] | None = None
        self.start_redis()
        self.env = {
            "REFEREE_BROKER_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "REFEREE_POLICY_BACKEND": "transformers",
            "REFEREE_POLICY_MODEL": "tiny-random",
            "REFEREE_JOB_LEASE_S": "3",
            "REFEREE_MATH_WORKERS": "1",
            "REFEREE_SANDBOX_SLOTS": "1",
        }
        self.api = server_factory(tmp, self.env, "api")
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def start_redis(self) -> None:
        self.redis_proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.redis_port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.tmp),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.redis_port)
        for _ in range(100):
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def restart_redis(self, down_s: float) -> None:
        assert self.redis_proc is not None
        self.redis_proc.terminate()  # a clean shutdown; the append-only file keeps everything
        self.redis_proc.wait(timeout=30)
        time.sleep(down_s)
        self.start_redis()

    def start_worker(self, name: str) -> None:
        with open(self.tmp / f"worker-{name}.log", "wb") as log:
            self.workers[name] = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "referee.services.cli",
                    "worker",
                    "--concurrency",
                    "1",
                    "--hostname",
                    f"{name}@%h",
                    "--loglevel",
                    "warning",
                ],
                env={**os.environ, **self.env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill_worker(self, name: str) -> None:
        proc = self.workers.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)  # the worker and its pool processes, no goodbye
        proc.wait(timeout=30)

    def owner_of(self, pid: int) -> str | None:
        """The worker whose process tree holds ``pid``."""
        while pid > 1:
            for name, proc in self.workers.items():
                if proc.pid == pid:
                    return name
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                return None
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        return None

    def close(self) -> None:
        for name in list(self.workers):
            self.kill_worker(name)
        if self.redis_proc is not None:
            self.redis_proc.terminate()
            self.redis_proc.wait(timeout=30)
