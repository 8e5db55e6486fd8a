"""Helpers shared by the job tests: a cluster of real parts (a redis-server of the test's own on
a free port, the API with ``REFEREE_BROKER_URL``, ``referee worker`` processes), and waits."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from referee.client import RefereeClient
from referee.services.launcher import free_port, start_redis, worker_argv


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


class Cluster:
    def __init__(self, tmp: Path, server_factory: Any, env: dict[str, str] | None = None) -> None:
        self.tmp = tmp
        self.redis_port = free_port()
        self.start_redis()
        self.env = {
            "REFEREE_BROKER_URL": f"redis://127.0.0.1:{self.redis_port}/0",
            "REFEREE_POLICY_BACKEND": "transformers",
            "REFEREE_POLICY_MODEL": "tiny-random",
            "REFEREE_JOB_LEASE_S": "3",
            "REFEREE_MATH_WORKERS": "1",
            "REFEREE_SANDBOX_SLOTS": "1",
            **(env or {}),
        }
        self.api = server_factory(tmp, self.env, "api")
        self.workers: dict[str, subprocess.Popen[bytes]] = {}

    def start_redis(self) -> None:
        # persistent: restart_redis must find every job again
        self.redis = start_redis(self.tmp, port=self.redis_port, persist=True)

    def restart_redis(self, down_s: float) -> None:
        self.redis.stop(timeout_s=30)  # a clean shutdown; the append-only file keeps everything
        time.sleep(down_s)
        self.start_redis()

    def start_worker(self, name: str) -> None:
        with open(self.tmp / f"worker-{name}.log", "wb") as log:
            self.workers[name] = subprocess.Popen(
                worker_argv(f"{name}@%h"),
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
        self.redis.stop(timeout_s=30)
