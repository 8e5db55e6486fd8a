"""The ``docker`` backend: one short-lived container per run, through the Docker SDK.

Each run gets a container from ``image`` (``docker/build-sandbox-image.sh`` builds
``referee-sandbox:latest``) with no network, a read-only root filesystem, tmpfs /work and /tmp
of capped size, memory (swap included) and pids limits, a CPU quota, all capabilities dropped,
``no-new-privileges``, Docker's default seccomp profile, a private IPC namespace, uid/gid 65534,
rlimits (CPU, file size, open files, core) and a tiny init (``docker-init``) as PID 1, so a
program dies of its signals as it would anywhere else and its children are reaped and killed with
it. Logging is off (``log_config none``): output is read from an attach stream opened before the
container starts, capped like every other backend, and never written to the daemon's disk.
The wall clock is kept here: past ``wall_time_s`` the container is killed. The container is
removed when the run ends, whatever happened (``force=True``); containers carry the label
``org.referee.sandbox`` so an operator can find any a crashed process left behind.

Commands run by name (by-name mode, ``languages.by_name_argv``): a recipe's host toolchain path
(a pyenv Python, ``/usr/lib/jvm/.../java``) becomes ``python3``, ``java``, ... found on the
image's PATH. ``create()`` asks the image once which tools it has; a run whose tool the image
lacks is a ``sandbox_error`` saying so.

The program's directory is bind-mounted at /code (read-only except for a compile step) and stdin
is fed from a bind-mounted file, so the daemon must share this host's filesystem (a local
dockerd). The ``docker`` package is imported lazily, so the rest of the sandbox does not need it.
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

from referee.sandbox.backend import StartCounter, finished_result
from referee.sandbox.errors import SandboxUnavailable
from referee.sandbox.languages import IMAGE_TOOLS, by_name_argv
from referee.sandbox.models import MIB, SANDBOX_UID, ExecRequest, RunResult, RunStatus
from referee.sandbox.process_io import RawOutcome

__all__ = ["CONTAINER_LABEL", "DEFAULT_IMAGE", "DockerBackend", "docker_daemon_unreachable"]

DEFAULT_IMAGE = "referee-sandbox:latest"
CONTAINER_LABEL = "org.referee.sandbox"
# Seconds to wait for a killed container to report its exit, and for the output stream to end.
_STOP_GRACE_S = 10.0
_PROBE_TOOLS = tuple(sorted({tool for tools in IMAGE_TOOLS.values() for tool in tools}))


def _docker_module() -> Any:
    try:
        return importlib.import_module("docker")
    except ImportError as exc:
        raise SandboxUnavailable("the Docker SDK is not installed (`pip install docker`)") from exc


def _hand_to_sandbox_user(path: Path) -> None:
    """The container runs as 65534: let it read (and, for a compile, write) the program dir."""
    if os.geteuid() != 0:
        return
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


def _close_attach(stream: Any) -> None:
    """Close an attach stream's hijacked socket (the SDK leaves it open at end of stream)."""
    response: Any = getattr(stream, "_response", None)
    sock = None
    with contextlib.suppress(Exception):
        raw = response.raw._fp.fp.raw
        sock = getattr(raw, "_sock", None) or getattr(raw, "sock", None)
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.close()
    with contextlib.suppress(Exception):
        stream.close()
    with contextlib.suppress(Exception):
        response.close()


def _probe_image_tools(client: Any, image: str) -> frozenset[str]:
    """The tools of ``_PROBE_TOOLS`` on the image's PATH (one short container)."""
    script = 'for t in "$@"; do command -v "$t" >/dev/null 2>&1 && echo "$t"; done; true'
    out = client.containers.run(
        image,
        ["/bin/sh", "-c", script, "sh", *_PROBE_TOOLS],
        network_mode="none",
        remove=True,
        labels={CONTAINER_LABEL: "probe"},
    )
    text = out.decode() if isinstance(out, bytes) else str(out)
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


class DockerBackend(StartCounter):
    """Per-run containers. Thread-safe (the SDK client is shared; each run has its container)."""

    name = "docker"

    def __init__(
        self, client: Any, image: str = DEFAULT_IMAGE, tools: frozenset[str] | None = None
    ) -> None:
        self.client = client
        self.image = image
        # None: not probed (every tool is tried; a missing one fails as the program would).
        self.tools = tools
        super().__init__()

    @classmethod
    def create(cls, image: str = DEFAULT_IMAGE, base_url: str | None = None) -> DockerBackend:
        """Connect to the daemon (``DOCKER_HOST`` or ``base_url``), check the image exists and
        ask it which toolchains it has."""
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
            raise SandboxUnavailable(
                f"Docker image {image!r} is not available ({exc}); build it with "
                "docker/build-sandbox-image.sh"
            ) from exc
        try:
            tools = _probe_image_tools(client, image)
        except Exception as exc:
            client.close()
            raise SandboxUnavailable(f"Docker image {image!r} does not run: {exc}") from exc
        return cls(client, image, tools)

    def languages(self, candidates: list[str] | None = None) -> list[str]:
        """The languages (of ``candidates``, default all known) whose tools the image has."""
        names = list(IMAGE_TOOLS) if candidates is None else candidates
        if self.tools is None:
            return names
        tools = self.tools
        return [n for n in names if n in IMAGE_TOOLS and set(IMAGE_TOOLS[n]) <= tools]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()

    def run(self, request: ExecRequest) -> RunResult:
        self.count_start(request)
        argv = by_name_argv(request.argv)
        if self.tools is not None and not argv[0].startswith("/") and argv[0] not in self.tools:
            return RunResult(
                status=RunStatus.SANDBOX_ERROR,
                message=f"the sandbox image {self.image!r} has no {argv[0]!r}",
            )
        io_dir = Path(tempfile.mkdtemp(prefix="referee-docker-"))
        try:
            (io_dir / "stdin").write_bytes(request.stdin)
            io_dir.chmod(0o755)
            (io_dir / "stdin").chmod(0o644)
            if request.program_dir is not None:
                _hand_to_sandbox_user(request.program_dir)
            return self._run(request, argv, io_dir)
        finally:
            shutil.rmtree(io_dir, ignore_errors=True)

    def _run(self, request: ExecRequest, argv: tuple[str, ...], io_dir: Path) -> RunResult:
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
        # exec: a program may build and run helpers in its work dir, as under bwrap.
        tmpfs_opts = f"rw,exec,nosuid,nodev,size={limits.work_dir_mb}m,mode=1777"
        env = {"HOME": "/work", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
        env.update({k: v for k, v in request.env.items() if k != "PATH"})
        ulimit = docker.types.Ulimit
        try:
            container = self.client.containers.create(
                self.image,
                command=["/bin/sh", "-c", 'exec "$@" < /io/stdin', "sh", *argv],
                init=True,
                network_mode="none",
                read_only=True,
                tmpfs={"/work": tmpfs_opts, "/tmp": tmpfs_opts},
                shm_size=limits.work_dir_mb * MIB,
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
                log_config={"type": "none"},
                labels={CONTAINER_LABEL: "run"},
                stdin_open=False,
                tty=False,
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
        flags = {"overflow": False, "err_truncated": False, "err_overflow": False, "ended": False}
        err_seen = [0]

        def kill() -> None:
            with contextlib.suppress(Exception):
                container.kill()

        try:
            # Attached before the start (logging is off: nothing is replayed afterwards).
            stream = container.attach(stdout=True, stderr=True, stream=True, demux=True)
        except Exception as exc:
            return RunResult(status=RunStatus.SANDBOX_ERROR, message=f"docker attach failed: {exc}")

        # Set when the reader stops (end of stream) or a cap is hit. The reader never kills: a
        # kill waits for the container to exit, which waits for its output to be drained, so
        # the reader keeps draining (and dropping) while this thread kills the container.
        wake = threading.Event()

        def reader() -> None:
            try:
                with contextlib.suppress(Exception):
                    for chunk_out, chunk_err in stream:
                        if chunk_out and not flags["overflow"]:
                            room = limits.output_bytes - len(out)
                            out.extend(chunk_out[: max(room, 0)])
                            if len(chunk_out) > room:
                                flags["overflow"] = True
                                wake.set()
                        if chunk_err:
                            room = limits.stderr_bytes - len(err)
                            if room > 0:
                                err.extend(chunk_err[:room])
                            if len(chunk_err) > room:
                                flags["err_truncated"] = True
                            err_seen[0] += len(chunk_err)
                            if err_seen[0] > limits.output_bytes and not flags["err_overflow"]:
                                flags["err_overflow"] = True  # a flood is stopped, as stdout is
                                wake.set()
            finally:
                flags["ended"] = True
                wake.set()

        started = time.monotonic()
        try:
            container.start()
        except Exception as exc:
            _close_attach(stream)
            return RunResult(status=RunStatus.SANDBOX_ERROR, message=f"docker start failed: {exc}")
        thread = threading.Thread(target=reader, name="referee-docker-reader", daemon=True)
        thread.start()
        # The stream ends when the container stops (its init takes every process with it).
        wake.wait(timeout=max(0.0, started + limits.wall_time_s - time.monotonic()))
        capped = flags["overflow"] or flags["err_overflow"]
        timed_out = not flags["ended"] and not capped
        if capped or timed_out:
            kill()
            thread.join(timeout=_STOP_GRACE_S)
        returncode: int | None = None
        try:
            status = container.wait(timeout=_STOP_GRACE_S)
            returncode = int(status.get("StatusCode", -1))
        except Exception:
            kill()
        wall = time.monotonic() - started
        _close_attach(stream)  # ends the reader if it still waits; frees the socket
        thread.join(timeout=_STOP_GRACE_S)
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
            timed_out=timed_out and not (flags["overflow"] or flags["err_overflow"]),
            wall_time_s=wall,
            stderr_overflow=flags["err_overflow"],
        )
        if returncode is None and not timed_out and not flags["overflow"]:
            return RunResult(
                status=RunStatus.SANDBOX_ERROR,
                stdout=raw.stdout.decode("utf-8", errors="replace"),
                message="the container did not report its exit status",
                wall_time_s=wall,
            )
        return finished_result(raw, limits, shell_style=True, oom_killed=oom)
