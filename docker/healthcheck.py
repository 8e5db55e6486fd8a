"""The images' healthcheck: exit 0 when this container's role is healthy, 1 otherwise.

    python3 healthcheck.py api        # GET /readyz answers 200 (math checks run end to end)
    python3 healthcheck.py sandbox    # /readyz, and the sandbox backend is up (bubblewrap works)
    python3 healthcheck.py worker     # the Celery worker of this container answers a ping

The port is $REFEREE_PORT (api 8000, sandbox 8001 by default); the server is asked on
127.0.0.1, which works with a bridge network and with host networking alike. An HTTP check
waits $REFEREE_HEALTHCHECK_TIMEOUT_S (3 s): /readyz answers at once even under load, and the
healthcheck's own timeout (5 s in docker-compose.yml and the Dockerfile) leaves room for it.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import urllib.request
from pathlib import Path


def _get(path: str, default_port: str) -> dict[str, object]:
    url = f"http://127.0.0.1:{os.environ.get('REFEREE_PORT', default_port)}{path}"
    timeout = float(os.environ.get("REFEREE_HEALTHCHECK_TIMEOUT_S", "3"))
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: dict[str, object] = json.load(response)
        return body


def _container_worker_name() -> str | None:
    """The name docker/entrypoint.sh gives a worker: ``worker-`` and the container's short id
    (a ``docker exec``, as a healthcheck is, does not see the entrypoint's environment)."""
    found = re.search(
        r"/containers/([0-9a-f]{64})/hostname ", Path("/proc/self/mountinfo").read_text()
    )
    return f"worker-{found.group(1)[:12]}" if found else None


def check(role: str) -> str | None:
    """Why the role is not healthy, or None."""
    if role == "api":
        ready = _get("/readyz", "8000")
        return None if ready.get("status") == "ready" else f"not ready: {ready}"
    if role == "sandbox":
        ready = _get("/readyz", "8001")
        components = ready.get("components")
        sandbox = components.get("sandbox") if isinstance(components, dict) else None
        if ready.get("status") != "ready" or sandbox in (None, "unavailable"):
            return f"no sandbox: {_get('/v1/sandbox/languages', '8001').get('reason')}"
        return None
    if role == "worker":
        from referee.services.jobs.celery_app import make_celery
        from referee.services.settings import Settings

        settings = Settings()
        node = f"celery@{settings.worker_name or _container_worker_name() or socket.gethostname()}"
        replies = make_celery(settings).control.ping(destination=[node], timeout=5.0)
        return None if replies else "the worker does not answer a ping"
    return f"unknown role {role!r}"


if __name__ == "__main__":
    try:
        reason = check(sys.argv[1] if len(sys.argv) > 1 else "api")
    except Exception as exc:  # unreachable, refused, a broken answer: all unhealthy
        reason = f"{type(exc).__name__}: {exc}"
    if reason:
        print(reason, file=sys.stderr)
        sys.exit(1)
