"""The in-sandbox side of a persistent Python interpreter: runs cells in one kept namespace.

Not imported by the package and never run on the host: ``PersistentInterpreter`` runs this
file's text (after ``supervisor_common.py``'s, see ``supervised.supervisor_source``) with
``python -I -S -B -c`` as the sandbox's first process (uid 65534, inside the session's
namespaces, seccomp filter and cgroup); ``guard`` makes it exit anywhere else, since it kills
every other process it may signal after each cell. Requests come on fd 0, answers go on fd 1
(frames: 8-byte big-endian length + ``marshal`` data):

* request ``{"code": str, "stdout_cap": int, "stderr_cap": int}``;
* ``{"ended": True}`` as soon as the cell's code is done (before output is collected and other
  processes are killed: the host's per-call limits stop there), then the
* answer ``{"error": bool, "interrupted": bool, "memory_error": bool, "traceback": str,
  "stdout": bytes, "stderr": bytes, "stdout_seen": int, "stderr_seen": int, "wall": float,
  "clean": bool}``.

A cell runs in this process, in the main thread, in one ``__main__`` namespace kept across
cells: variables, imports, functions and threads survive. Its last statement, when it is an
expression, is shown as a REPL shows it (``sys.displayhook``: the repr, unless None), unless the
cell ends with ``;`` (as in Jupyter). fds 1 and 2 are pipes per cell, drained by a thread that
keeps the first ``*_cap`` bytes and counts the rest, so output of subprocesses is captured and
capped too. An exception ends the cell with its traceback as a REPL prints it (the cell's own
frames, its lines shown from ``<cell-N>``). SIGINT raises KeyboardInterrupt while a cell runs
and is ignored otherwise: that is how the host interrupts a cell past its time. After each cell
every other process of the sandbox (daemons, double forks, ``Popen('sleep 1000')``) is killed;
a ``fork()`` of the cell that runs on past the cell's end exits there instead of serving.
"""

import ast
import io
import linecache
import os
import signal
import sys
import threading
import time
import traceback
import types

from supervisor_common import guard, kill_others, recv, send, set_dumpable  # type: ignore[import-not-found]

_CHUNK = 65536
_SITE_ENV = "REFEREE_SITE_DIR"
_CTL_IN = -1
_CTL_OUT = -1
_IN_CELL = False
_CELLS = 0
_PID = os.getpid()


def _on_sigint(signum: int, frame: object) -> None:
    if _IN_CELL:
        raise KeyboardInterrupt


_SIGINT_LINE = _on_sigint.__code__.co_firstlineno + 2


class _Capture:
    """A pipe whose reader thread keeps the first ``cap`` bytes written to it."""

    def __init__(self, cap: int) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.cap = cap
        self.data = bytearray()
        self.seen = 0
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.read_fd, _CHUNK)
            except OSError:
                break
            if not chunk:
                break
            room = self.cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            self.seen += len(chunk)
        os.close(self.read_fd)


def _stream(fd: int) -> io.TextIOWrapper:
    raw = io.FileIO(fd, "wb", closefd=False)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", write_through=True)


def _compile(source: str, filename: str) -> list[types.CodeType]:
    """The cell as code objects: all but a last expression statement, then that one in
    ``single`` mode (which shows its value through ``sys.displayhook``)."""
    try:
        tree = ast.parse(source, filename, "exec")
    except UnicodeEncodeError as exc:  # a lone surrogate: no UTF-8 source holds one
        bad = source[exc.start : exc.end].encode("unicode_escape", "backslashreplace").decode()
        line = source.count("\n", 0, exc.start) + 1
        raise SyntaxError(
            f"the code holds {bad}, a lone surrogate, which is not valid source (line {line})"
        ) from None
    shown = tree.body and isinstance(tree.body[-1], ast.Expr) and not _ends_quiet(source)
    if not shown:
        return [compile(tree, filename, "exec", dont_inherit=True)]
    last = tree.body.pop()
    codes = [compile(tree, filename, "exec", dont_inherit=True)] if tree.body else []
    single = ast.Interactive(body=[last])
    codes.append(compile(single, filename, "single", dont_inherit=True))
    return codes


def _ends_quiet(source: str) -> bool:
    lines = [line.split("#", 1)[0].rstrip() for line in source.rstrip().splitlines()]
    return bool(lines) and lines[-1].endswith(";")


def _exec(codes: list[types.CodeType], namespace: dict) -> BaseException | None:  # type: ignore[type-arg]
    global _IN_CELL
    try:
        _IN_CELL = True
        for code in codes:
            exec(code, namespace)
        _IN_CELL = False
    except BaseException as exc:
        _IN_CELL = False
        return exc
    return None


def _traceback_text(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return "".join(traceback.format_exception_only(type(exc), exc))
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame.f_code is _exec.__code__:
        tb = tb.tb_next  # the cell's frames only, as a REPL shows them
    shown = traceback.TracebackException(type(exc), exc, tb)
    stack = shown.stack
    if stack and stack[-1].name == _on_sigint.__name__ and stack[-1].lineno == _SIGINT_LINE:
        del stack[-1]  # where the interrupt was raised: the supervisor, not the cell
    return "".join(shown.format())


def _run_cell(req: dict, namespace: dict) -> dict:  # type: ignore[type-arg]
    global _CELLS, _IN_CELL
    _CELLS += 1
    filename = f"<cell-{_CELLS}>"
    source = req["code"]
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    out = _Capture(req["stdout_cap"])
    err = _Capture(req["stderr_cap"])
    os.dup2(out.write_fd, 1)
    os.dup2(err.write_fd, 2)
    os.close(out.write_fd)
    os.close(err.write_fd)
    sys.stdout = sys.__stdout__ = _STDOUT  # type: ignore[misc,assignment]
    sys.stderr = sys.__stderr__ = _STDERR  # type: ignore[misc,assignment]
    started = time.monotonic()
    failure: BaseException | None
    try:
        codes = _compile(source, filename)
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as exc:
        failure = exc
    else:
        while True:
            try:
                failure = _exec(codes, namespace)
                break
            except KeyboardInterrupt as late:  # the interrupt came as the cell ended
                _IN_CELL = False
                failure = late
                break
    if os.getpid() != _PID:  # a fork the cell made ran off the cell's end: it must not serve
        os._exit(0)
    wall = time.monotonic() - started
    send(_CTL_OUT, {"ended": True})  # the host's time limits stop here; cleaning follows
    text = ""
    if failure is not None:
        try:
            text = _traceback_text(failure)
        except BaseException:  # an exception whose repr fails
            text = f"{type(failure).__name__}: <exception str() failed>\n"
        cap = max(req["stderr_cap"], 4096)
        if len(text) > cap:  # a huge message: its head and the exception line's end
            text = text[: cap // 2] + "\n[... traceback truncated ...]\n" + text[-cap // 2 :]
    for stream in (_STDOUT, _STDERR):
        try:
            stream.flush()
        except Exception:
            pass
    clean = kill_others()
    nul = os.open("/dev/null", os.O_WRONLY)
    os.dup2(nul, 1)
    os.dup2(nul, 2)
    os.close(nul)
    out.thread.join(2.0)
    err.thread.join(2.0)
    return {
        "error": failure is not None,
        "interrupted": isinstance(failure, KeyboardInterrupt),
        "memory_error": isinstance(failure, MemoryError),
        "traceback": text,
        "stdout": bytes(out.data),
        "stderr": bytes(err.data),
        "stdout_seen": out.seen,
        "stderr_seen": err.seen,
        "wall": wall,
        "clean": clean and not out.thread.is_alive() and not err.thread.is_alive(),
    }


def _serve() -> None:
    global _STDOUT, _STDERR
    nul = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(nul, fd)
    os.close(nul)
    set_dumpable(0)
    import _sitebuiltins  # what `site` adds to builtins: exit(), quit(), help()
    import builtins

    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    builtins.help = _sitebuiltins._Helper()
    site_dir = os.environ.get(_SITE_ENV, "")
    if site_dir and os.path.isdir(site_dir):
        sys.path.append(site_dir)
    os.chdir("/work")
    _STDOUT, _STDERR = _stream(1), _stream(2)
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "rb", closefd=False))  # type: ignore[misc]
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    sys.argv = [""]
    signal.signal(signal.SIGINT, _on_sigint)
    send(_CTL_OUT, {"ready": True, "python": sys.version})
    while True:
        req = recv(_CTL_IN)
        if req is None:
            return
        send(_CTL_OUT, _run_cell(req, main.__dict__))


_STDOUT = sys.stdout
_STDERR = sys.stderr


def _main() -> None:
    global _CTL_IN, _CTL_OUT
    guard("interpreter_supervisor")
    _CTL_IN, _CTL_OUT = os.dup(0), os.dup(1)
    _serve()
    os._exit(0)


if __name__ == "__main__":  # run with -c; importing this module does nothing
    _main()
