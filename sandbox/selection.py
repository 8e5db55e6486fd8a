"""Choosing the isolation backend: ``bwrap`` by default, ``docker`` on request, and
``unsafe_local`` only when explicitly allowed.

``select_backend(name, allow_unsafe_local=...)`` builds (and probes, once per process and
choice) the backend; ``backend_from_env()`` reads ``REFEREE_SANDBOX_BACKEND``,
``REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL`` and ``REFEREE_SANDBOX_DOCKER_IMAGE`` at call time (the
service passes its settings instead). With no isolation available, ``SandboxUnavailable`` says
how to enable it.
"""

from __future__ import annotations

import os
import threading

from referee.sandbox.backend import SandboxBackend
from referee.sandbox.bwrap_backend import BwrapBackend
from referee.sandbox.docker_backend import DEFAULT_IMAGE, DockerBackend
from referee.sandbox.errors import SandboxUnavailable
from referee.sandbox.local_backend import UnsafeLocalBackend

__all__ = ["BACKEND_NAMES", "backend_from_env", "select_backend"]

BACKEND_NAMES = ("auto", "bwrap", "docker", "unsafe_local")
_TRUE = {"1", "true", "yes", "on"}

_cache: dict[tuple[str, str], SandboxBackend] = {}
_cache_lock = threading.Lock()


def select_backend(
    name: str | None = None,
    *,
    allow_unsafe_local: bool = False,
    docker_image: str = DEFAULT_IMAGE,
) -> SandboxBackend:
    """The backend called ``name`` (``None``/``"auto"``: bwrap), probed once and cached.

    ``unsafe_local`` is returned only when ``allow_unsafe_local`` is true; ``auto`` never falls
    back to it.
    """
    choice = (name or "auto").strip().lower()
    if choice not in BACKEND_NAMES:
        raise ValueError(f"unknown sandbox backend {name!r}; choose one of {BACKEND_NAMES}")
    if choice == "unsafe_local":
        if not allow_unsafe_local:
            raise SandboxUnavailable(
                "the unsafe_local backend was chosen but REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL "
                "is not true"
            )
        return UnsafeLocalBackend()
    key = (choice, docker_image if choice == "docker" else "")
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            return cached
        backend: SandboxBackend
        if choice == "docker":
            backend = DockerBackend.create(image=docker_image)
        else:
            backend = BwrapBackend.create()
        _cache[key] = backend
        return backend


def backend_from_env(environ: dict[str, str] | None = None) -> SandboxBackend:
    """``select_backend`` driven by the ``REFEREE_SANDBOX_*`` environment variables."""
    env = dict(os.environ if environ is None else environ)
    return select_backend(
        env.get("REFEREE_SANDBOX_BACKEND") or None,
        allow_unsafe_local=env.get("REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL", "").lower() in _TRUE,
        docker_image=env.get("REFEREE_SANDBOX_DOCKER_IMAGE") or DEFAULT_IMAGE,
    )
