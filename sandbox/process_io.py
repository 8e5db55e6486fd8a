"""Feeding stdin and reading capped stdout/stderr of a running process, under a deadline.

One ``selectors`` loop in the calling thread writes stdin and reads both pipes while the program
runs (no extra threads, no signals: safe to call from any thread). Stdout past its cap, stderr
past its stop (a flood is stopped as stdout is, not left to run to the time limit), the wall
deadline, or pipes held open by stray children after the main process exited all call ``kill``;
the loop then drains what is left and returns. :func:`cut_for_json` cuts a run's text to what
fits a response body once JSON-escaped (8 MiB of newlines is 16 MiB of JSON).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["RawOutcome", "communicate", "cut_for_json", "decode_output"]

_CHUNK = 65536
_EXIT_GRACE_S = 0.05


@dataclass(slots=True)
class RawOutcome:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    stdout_overflow: bool
    stderr_truncated: bool
    timed_out: bool
    wall_time_s: float
    stderr_overflow: bool = False
    """stderr passed its stop and the program was stopped."""


def decode_output(data: bytes) -> str:
    """Bytes to text; invalid UTF-8 becomes U+FFFD, never an error."""
    return data.decode("utf-8", errors="replace")


def _json_bytes(text: str) -> int:
    return len(json.dumps(text, ensure_ascii=False).encode()) - 2


def cut_for_json(text: str, budget: int) -> tuple[str, bool]:
    """``text`` cut so that its JSON string (escapes included, UTF-8) takes at most ``budget``
    bytes, and whether it was cut."""
    if len(text) * 6 <= budget:  # even if every character needed a \u escape
        return text, False
    size = _json_bytes(text)
    if size <= budget:
        return text, False
    keep = len(text)
    while size > budget and keep > 0:
        keep = int(keep * budget / size * 0.98)
        size = _json_bytes(text[:keep])
    return text[:keep], True


def communicate(
    proc: subprocess.Popen[bytes],
    stdin: bytes,
    *,
    started: float,
    wall_time_s: float,
    stdout_cap: int,
    stderr_cap: int,
    kill: Callable[[], None],
    stderr_stop: int | None = None,
) -> RawOutcome:
    """Run ``proc``'s I/O to the end. ``started`` is the ``time.monotonic()`` of the spawn.
    Stderr past ``stderr_cap`` is dropped; past ``stderr_stop`` (None: never) the program is
    stopped."""
    deadline = started + wall_time_s
    out = bytearray()
    err = bytearray()
    overflow = False
    err_truncated = False
    err_overflow = False
    err_seen = 0
    timed_out = False
    killed = False
    killed_at = 0.0
    exited_at: float | None = None
    view = memoryview(stdin)
    pos = 0

    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    for pipe in (proc.stdout, proc.stderr):
        os.set_blocking(pipe.fileno(), False)
        sel.register(pipe, selectors.EVENT_READ)
    if proc.stdin is not None:
        if stdin:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()

    def do_kill() -> None:
        nonlocal killed, killed_at
        if not killed:
            killed = True
            killed_at = time.monotonic()
            kill()

    try:
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline and not killed:
                timed_out = True
                do_kill()
            if proc.poll() is not None:
                exited_at = exited_at or now
                if now - exited_at > _EXIT_GRACE_S and not killed:
                    do_kill()  # stray children hold the pipes open
            timeout = 0.01 if killed else max(0.0, min(deadline - now, 0.05))
            for key, _ in sel.select(timeout):
                fileobj = key.fileobj
                if proc.stdin is not None and fileobj is proc.stdin:
                    try:
                        pos += os.write(proc.stdin.fileno(), view[pos : pos + _CHUNK])
                    except (BrokenPipeError, ConnectionResetError):
                        pos = len(view)
                    except BlockingIOError:
                        continue
                    if pos >= len(view):
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                assert fileobj is proc.stdout or fileobj is proc.stderr
                try:
                    chunk = os.read(fileobj.fileno(), _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(fileobj)
                    continue
                if fileobj is proc.stdout:
                    room = stdout_cap - len(out)
                    if len(chunk) > room:
                        out += chunk[: max(room, 0)]
                        overflow = True
                        do_kill()
                        sel.unregister(fileobj)
                    else:
                        out += chunk
                else:
                    err_seen += len(chunk)
                    room = stderr_cap - len(err)
                    if len(chunk) > room:
                        err += chunk[: max(room, 0)]
                        err_truncated = True
                    else:
                        err += chunk
                    if stderr_stop is not None and err_seen > stderr_stop:
                        err_overflow = True
                        do_kill()
                        sel.unregister(fileobj)
            if killed and time.monotonic() > killed_at + 2.0:
                break  # the kill did not close the pipes; give up reading
    finally:
        sel.close()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    remaining = max(0.0, deadline - time.monotonic())
    try:
        returncode: int | None = proc.wait(timeout=remaining if not killed else 2.0)
    except subprocess.TimeoutExpired:
        timed_out = timed_out or not killed
        do_kill()
        try:
            returncode = proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            returncode = None
    return RawOutcome(
        returncode=returncode,
        stdout=bytes(out),
        stderr=bytes(err),
        stdout_overflow=overflow,
        stderr_truncated=err_truncated,
        timed_out=timed_out,
        wall_time_s=time.monotonic() - started,
        stderr_overflow=err_overflow,
    )
