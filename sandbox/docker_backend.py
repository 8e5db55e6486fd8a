"""The ``docker`` backend: one short-lived container per run, through the Docker SDK.

Each run gets a container from ``image`` with no network, a read-only root filesystem, tmpfs
/work and /tmp of capped size, memory (and swap) and pids limits, a CPU quota, all capabilities
dropped, ``no-new-privileges``, uid/gid 65534 and rlimits (CPU, file size, open files, core).
The program's directory is bind-mounted at /code (read-only except for a compile step) and
stdin is fed from a bind-mounted file, so the daemon must share this host's filesystem (a local
dockerd). Output is streamed while the container runs and capped like every other backend.

The image must hold the toolchains on its PATH (``python3``, ``gcc``, ...). The ``docker``
package is imported lazily, so the rest of the sandbox does not need it.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from referee.sandbox.backend import classify, split_exit_status
from referee.sandbox.errors import SandboxUnavailable
from referee.sandbox.models import MIB, SANDBOX_UID, ExecRequest, RunResult, RunStatus
from referee.sandbox.process_io import RawOutcome

__all__ = ["DEFAULT_IMAGE", "DockerBackend", "docker_daemon_unreachable"]

DEFAULT_IMAGE = "referee-sandbox:latest"


def _docker_module() -> Any:
    try:
        return importlib.import_module("docker")
    except ImportError as exc:
        raise SandboxUnavailable("the Docker SDK is not installed (`pip install docker`)") from exc


def _hand_to_sandbox_user(path: Path) -> None:
    """The container runs as 65534: let it read (and, for a compile, write) the program dir."""
    with contextlib.suppress(OSError):
        for item in [path, *path.rglob("*")]:
            os.chown(item, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)


def docker_daemon_unreachable(base_url: str | None = None) -> str | None:
    """Why no Docker daemon can be reached, or ``None`` when one answers on its unix socket.

    Checked with a plain socket first: the SDK leaks a socket when the daemon is absent.
    """
    url = base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if not url.startswith("unix://"):
        return None  # tcp/ssh daemons: let the SDK find out
    path = url.removeprefix("unix://")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2.0)
        try:
            sock.connect(path)
        except OSError as exc:
            return f"no Docker daemon is reachable at {url}: {exc.strerror or exc}"
    return None


class DockerBackend:
    """Per-run containers. Thread-safe (the SDK client is shared; each run has its container)."""

    name = "docker"

    def __init__(self, client: Any, image: str = DEFAULT_IMAGE) -> None:
        self.client = client
        self.image = image
        self._lock = threading.Lock()
        self.runs_started = 0
        self.compiles_started = 0

    @classmethod
    def create(cls, image: str = DEFAULT_IMAGE, base_url: str | None = None) -> DockerBackend:
        """Connect to the daemon (``DOCKER_HOST`` or ``base_url``) and check the image exists."""
        docker = _docker_module()
        reason = docker_daemon_unreachable(base_url)
        if reason is not None:
            raise SandboxUnavailable(reason)
        try:
            client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
        except Exception as exc:  # the SDK raises several unrelated types here
            raise SandboxUnavailable(f"no Docker daemon is reachable: {exc}") from exc
        try:
            client.ping()
        except Exception as exc:
            client.close()
            raise SandboxUnavailable(f"no Docker daemon is reachable: {exc}") from exc
        try:
            client.images.get(image)
        except Exception as exc:
            client.close()
            raise SandboxUnavailable(f"Docker image {image!r} is not available: {exc}") from exc
        return cls(client, image)

    def run(self, request: ExecRequest) -> RunResult:
        with self._lock:
            if request.kind == "compile":
                self.compiles_started += 1
            else:
                self.runs_started += 1
        io_dir = Path(tempfile.mkdtemp(prefix="referee-docker-"))
        try:
            (io_dir / "stdin").write_bytes(request.stdin)
            io_dir.chmod(0o755)
            (io_dir / "stdin").chmod(0o644)
            if request.program_dir is not None:
                _hand_to_sandbox_user(request.program_dir)
            return self._run(request, io_dir)
        finally:
            shutil.rmtree(io_dir, ignore_errors=True)

    def _run(self, request: ExecRequest, io_dir: Path) -> RunResult:
        docker = _docker_module()
        limits = request.limits
        cpu = max(1, math.ceil(limits.effective_cpu_time_s))
        fsize = limits.file_size_mb * MIB
        volumes = {str(io_dir): {"bind": "/io", "mode": "ro"}}
        if request.program_dir is not None:
            volumes[str(request.program_dir)] = {
                "bind": "/code",
                "mode": "rw" if request.program_dir_writable else "ro",
            }
        tmpfs_opts = f"size={limits.work_dir_mb}m,mode=1777"
        env = {"HOME": "/work", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
        env.update({k: v for k, v in request.env.items() if k != "PATH"})
        ulimit = docker.types.Ulimit
        try:
            container = self.client.containers.create(
                self.image,
                command=["/bin/sh", "-c", 'exec "$@" < /io/stdin', "sh", *request.argv],
                network_mode="none",
                read_only=True,
                tmpfs={"/work": tmpfs_opts, "/tmp": tmpfs_opts, "/dev/shm": tmpfs_opts},
                mem_limit=limits.memory_mb * MIB,
                memswap_limit=limits.memory_mb * MIB,
                pids_limit=limits.max_processes,
                nano_cpus=int(limits.cpus * 1e9),
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                user=f"{SANDBOX_UID}:{SANDBOX_UID}",
                working_dir=request.cwd,
                environment=env,
                volumes=volumes,
                ulimits=[
                    ulimit(name="cpu", soft=cpu, hard=cpu + 1),
                    ulimit(name="fsize", soft=fsize, hard=fsize),
                    ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
                    ulimit(name="core", soft=0, hard=0),
                ],
                ipc_mode="private",
                detach=True,
            )
        except Exception as exc:
            return RunResult(status=RunStatus.SANDBOX_ERROR, message=f"docker create failed: {exc}")
        try:
            return self._supervise(container, request)
        finally:
            with contextlib.suppress(Exception):
                container.remove(force=True)

    def _supervise(self, container: Any, request: ExecRequest) -> RunResult:
        limits = request.limits
        out = bytearray()
        err = bytearray()
        flags = {"overflow": False, "err_truncated": False}
        started = time.monotonic()

        def kill() -> None:
            with contextlib.suppress(Exception):
                container.kill()

        def reader() -> None:
            stream = container.attach(stdout=True, stderr=True, stream=True, demux=True, logs=True)
            for chunk_out, chunk_err in stream:
                if chunk_out:
                    room = limits.output_bytes - len(out)
                    out.extend(chunk_out[: max(room, 0)])
                    if len(chunk_out) > room:
                        flags["overflow"] = True
                        kill()
                        return
                if chunk_err:
                    room = limits.stderr_bytes - len(err)
                    err.extend(chunk_err[: max(room, 0)])
                    if len(chunk_err) > room:
                        flags["err_truncated"] = True

        try:
            container.start()
        except Exception as exc:
            return RunResult(status=RunStatus.SANDBOX_ERROR, message=f"docker start failed: {exc}")
        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        timed_out = False
        returncode: int | None = None
        try:
            status = container.wait(timeout=limits.wall_time_s)
            returncode = int(status.get("StatusCode", -1))
        except Exception:  # requests' ReadTimeout/ConnectionError: the deadline passed
            timed_out = True
            kill()
            with contextlib.suppress(Exception):
                returncode = int(container.wait(timeout=10).get("StatusCode", -1))
        thread.join(timeout=5)
        oom = False
        with contextlib.suppress(Exception):
            container.reload()
            oom = bool(container.attrs["State"].get("OOMKilled"))
        raw = RawOutcome(
            returncode=returncode,
            stdout=bytes(out),
            stderr=bytes(err),
            stdout_overflow=flags["overflow"],
            stderr_truncated=flags["err_truncated"],
            timed_out=timed_out and not flags["overflow"],
            wall_time_s=time.monotonic() - started,
        )
        exit_code, sig = split_exit_status(returncode, shell_style=True)
        return classify(
            raw,
            limits,
            exit_code=exit_code,
            signal=sig,
            oom_killed=oom,
            cpu_time_s=None,
            memory_peak_bytes=None,
        )
