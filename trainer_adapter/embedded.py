"""An in-process referee server for ``referee train`` when no ``--server`` is given.

The real app (``create_app``) under uvicorn on a free loopback port, in a background thread of
the training process, so rewards still travel over HTTP exactly as with a remote server:

    with embedded_referee(math_workers=2) as url:
        reward = reward_function(url, grader={"type": "math"})
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["embedded_referee"]


@contextmanager
def embedded_referee(math_workers: int = 2, start_timeout_s: float = 120.0) -> Iterator[str]:
    """Serve referee on 127.0.0.1 (a free port) for the duration of the block; yields its URL."""
    import uvicorn

    from referee.services.app import create_app
    from referee.services.settings import Settings

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    app = create_app(Settings(math_workers=math_workers, host="127.0.0.1", port=port))
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="referee-embedded", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the embedded referee server failed to start")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the embedded referee server did not start in time")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
