"""The in-sandbox supervisor of a batch: runs one program's tests, each as its own process.

Not imported by the package: ``BatchSandbox`` runs this file's text (after
``supervisor_common.py``'s, see ``supervised.supervisor_source``) with
``python -I -S -B -c`` as the sandbox's first process (uid 65534, inside the program's
namespaces, seccomp filter and cgroup). It reads requests from fd 0 and answers on fd 1, one
test at a time (frames: 8-byte big-endian length + ``marshal`` data):

* request ``{"argv": [...] | None, "path": str, "stdin": bytes, "wall": float, "rlimits":
  [(res, soft, hard)], "stdout_cap": int, "stderr_cap": int, "stderr_stop": int, "preload":
  [module names], "site": [dirs a forked test adds to sys.path]}``. With an
  ``argv`` the test process execs it (a compiled program); with ``argv=None`` it is a fork of
  this already-initialised interpreter that runs the Python file ``path`` as ``__main__``;
* answer ``{"returncode", "timed_out", "overflow", "err_overflow", "err_truncated", "wall",
  "stdout", "stderr", "maxrss", "clean"}``.

Between tests it kills every process of the sandbox but itself (``kill(-1, SIGKILL)`` reaches
all of them, daemons and double forks included), empties /work, /tmp and /dev/shm, and removes
System V IPC objects, so no state of one test reaches the next. It makes itself non-dumpable so
that a test (same uid) cannot open its pipes or memory through /proc; a test can still kill or
stop it, which the host sees (end of stream or no answer in time) and answers by running the
rest in fresh sandboxes. It imports only builtin or tiny modules, so a forked test starts from
an interpreter with no more state than a fresh ``python -I -S`` plus ``exit``/``quit``, and the
standard modules a request names in ``"preload"`` (imported once, before the test forks: the
python grader's driver asks for ``json`` and the few modules graders import, each of which a
fresh interpreter pays for on every run).
"""

import gc
import os
import select
import signal
import sys
import time

from supervisor_common import (  # type: ignore[import-not-found]
    empty_dir,
    guard,
    kill_others,
    recv,
    remove_sysv,
    send,
    set_dumpable,
    sysv_left,
)

_EXIT_GRACE_S = 0.05
_CHUNK = 65536
_CLEAN_DIRS = ("/work", "/tmp", "/dev/shm")
_ORIGINAL_STDIO = (sys.stdin, sys.stdout, sys.stderr)  # kept: they close fds 0-2 when freed
_CTL_IN = -1
_CTL_OUT = -1


def _recv() -> dict | None:  # type: ignore[type-arg]
    return recv(_CTL_IN)  # type: ignore[no-any-return]


def _send(answer: dict) -> None:  # type: ignore[type-arg]
    send(_CTL_OUT, answer)


def _clean() -> bool:
    if not kill_others():
        return False
    try:
        for path in _CLEAN_DIRS:
            empty_dir(path)
        if not sysv_left():
            return True
        remove_sysv()
        return not sysv_left()
    except OSError:
        return False


def _child(req: dict, fds: tuple[int, int, int]) -> None:  # type: ignore[type-arg]
    """In the forked test process: wire stdio, limits, then exec (or return to run Python)."""
    import resource

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for name in os.listdir("/proc/self/fd"):  # not closerange(3, big): a syscall per number
        if int(name) > 2:
            try:
                os.close(int(name))
            except OSError:
                pass
    for res, soft, hard in req["rlimits"]:
        resource.setrlimit(res, (soft, hard))
    os.chdir("/work")
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    if req["argv"] is not None:
        try:
            os.execvp(req["argv"][0], req["argv"])
        except OSError as exc:
            os.write(2, f"cannot run {req['argv'][0]}: {exc}\n".encode())
        os._exit(127)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # what a fresh interpreter does
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    sys.path.extend(d for d in req.get("site", ()) if d not in sys.path)  # as `site` would


_COMPILED: dict[str, object] = {}


def _compiled(path: str) -> object:
    """The program's code object, or the SyntaxError (or OSError) compiling it raised: compiled
    once here, not in each test (the compiler would write to, and so copy, shared pages)."""
    if path not in _COMPILED:
        try:
            with open(path, "rb") as f:
                _COMPILED[path] = compile(f.read(), path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, OSError) as exc:
            _COMPILED[path] = exc
        gc.freeze()  # what exists now is never collected in a test: no writes to its pages
    return _COMPILED[path]


_PRELOADED: set[str] = set()


def _preload(names: list) -> None:  # type: ignore[type-arg]
    """Import what the host asked for, once, before the first test forks from here (a module
    that fails to import is left to the test, which then gets its error as usual)."""
    fresh = [n for n in names if n not in _PRELOADED]
    for name in fresh:
        _PRELOADED.add(name)
        try:
            __import__(name)
        except Exception:  # the test imports it itself and sees the error
            pass
    if fresh:
        gc.freeze()  # as for a compiled program: its pages are never written in a test


def _run_one(req: dict) -> dict | tuple[str, object]:  # type: ignore[type-arg]
    """Run one test; in the test process return the path and code of the Python it runs."""
    if req["argv"] is None and req.get("preload"):
        _preload(req["preload"])
    code = _compiled(req["path"]) if req["argv"] is None else None
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(in_w)
        os.close(out_r)
        os.close(err_r)
        _child(req, (in_r, out_w, err_w))
        return req["path"], code
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    stdin = memoryview(req["stdin"])
    deadline = started + req["wall"]
    out = bytearray()
    err = bytearray()
    flags = {"timed_out": False, "overflow": False, "err_overflow": False, "err_truncated": False}
    err_seen = 0
    killed_at: float | None = None
    exited_at: float | None = None
    status: int | None = None
    maxrss = 0
    readers = {out_r, err_r}
    writer: int | None = in_w
    if not stdin:
        os.close(in_w)
        writer = None
    else:
        os.set_blocking(in_w, False)

    def kill() -> None:
        nonlocal killed_at
        if killed_at is None:
            killed_at = time.monotonic()
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass

    while readers or status is None:
        now = time.monotonic()
        if now >= deadline and killed_at is None and (readers or status is None):
            flags["timed_out"] = True
            kill()
        if status is None:
            got, st, ru = os.wait4(pid, os.WNOHANG)
            if got == pid:
                status, maxrss, exited_at = st, ru.ru_maxrss, now
                # As in a sandbox of its own, whose pid namespace ends with its first process:
                # what the test left running dies now (the pipes are then drained).
                kill()
        if exited_at is not None and readers and now - exited_at > _EXIT_GRACE_S:
            kill()  # stray children hold the pipes open
        if killed_at is not None and now - killed_at > 2.0:
            break
        if not readers:
            if status is not None:
                break  # reaped and drained: not a millisecond more
            time.sleep(0.001)
            continue
        timeout = 0.01 if killed_at is not None else max(0.0, min(deadline - now, 0.05))
        if status is None:
            timeout = min(timeout, 0.005)
        rl, wl, _ = select.select(
            list(readers), [writer] if writer is not None else [], [], timeout
        )
        if writer is not None and wl:
            try:
                n = os.write(writer, stdin[:_CHUNK])
                stdin = stdin[n:]
            except (BrokenPipeError, ConnectionResetError):
                stdin = stdin[len(stdin) :]
            except BlockingIOError:
                pass
            if not stdin:
                os.close(writer)
                writer = None
        for fd in rl:
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                readers.discard(fd)
                continue
            if fd == out_r:
                room = req["stdout_cap"] - len(out)
                if len(chunk) > room:
                    out += chunk[: max(room, 0)]
                    flags["overflow"] = True
                    kill()
                    readers.discard(fd)
                else:
                    out += chunk
            else:
                err_seen += len(chunk)
                room = req["stderr_cap"] - len(err)
                if len(chunk) > room:
                    err += chunk[: max(room, 0)]
                    flags["err_truncated"] = True
                else:
                    err += chunk
                if err_seen > req["stderr_stop"]:
                    flags["err_overflow"] = True
                    kill()
                    readers.discard(fd)
    for fd in (out_r, err_r, *([writer] if writer is not None else [])):
        os.close(fd)
    if status is None:
        kill()
        try:
            _, status, ru = os.wait4(pid, 0)
            maxrss = ru.ru_maxrss
        except ChildProcessError:
            status = None
    returncode = None
    if status is not None:
        if os.WIFSIGNALED(status):
            returncode = 128 + os.WTERMSIG(status)  # as bwrap's init reports it
        else:
            returncode = os.WEXITSTATUS(status)
    answer: dict[str, object] = dict(flags)
    answer.update(
        returncode=returncode,
        wall=time.monotonic() - started,
        stdout=bytes(out),
        stderr=bytes(err),
        maxrss=maxrss * 1024,
    )
    answer["clean"] = _clean()
    return answer


def _serve() -> tuple[str, object] | None:
    nul = os.open("/dev/null", os.O_RDWR)
    os.dup2(nul, 0)
    os.dup2(nul, 1)
    os.close(nul)
    set_dumpable(0)
    import _sitebuiltins  # what `site` would add to builtins: exit() and quit() are common
    import builtins

    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    builtins.help = _sitebuiltins._Helper()
    _send({"ready": True})
    while True:
        req = _recv()
        if req is None:
            return None
        result = _run_one(req)
        if isinstance(result, tuple):
            return result
        _send(result)


def _start_program(path: str, code: object) -> None:
    """In the test process: become a fresh ``python -I -S -B path`` as far as the program sees."""
    import io
    import types

    set_dumpable(1)
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        like = _ORIGINAL_STDIO[fd]  # made by this interpreter at start: same settings
        mode = "rb" if fd == 0 else "wb"
        raw = io.FileIO(fd, mode, closefd=False)
        buffered: io.BufferedIOBase
        buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        stream = io.TextIOWrapper(
            buffered,
            encoding=like.encoding,
            errors=like.errors,
            newline="\n",
            line_buffering=bool(like.line_buffering),
        )
        stream.mode = "r" if fd == 0 else "w"  # type: ignore[misc]
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)
    sys.argv = [path]
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__  # type: ignore[attr-defined]
    sys.modules["__main__"] = main
    status = 0
    try:
        if isinstance(code, BaseException):
            raise code
        exec(code, main.__dict__)  # type: ignore[arg-type]
    except SyntaxError as exc:  # as the interpreter reports it: no traceback
        sys.excepthook(type(exc), exc, None)
        status = 1
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:  # what the interpreter does with an uncaught exception
        sys.excepthook(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
        status = 1
    _exit(status)


def _exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _exit(status: int) -> None:
    """The interpreter's exit steps a program can see (non-daemon threads joined, atexit
    functions run, stdio flushed: 120 if stdout cannot be), then ``_exit``: the full
    finalisation would touch, and so copy, every page shared with the supervisor."""
    import atexit

    try:
        threading = sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    for stream, code in ((sys.stdout, 120), (sys.stderr, None)):
        try:
            stream.flush()
        except Exception:
            if code is not None and status == 0:
                status = code
    os._exit(status)


def _main() -> None:
    global _CTL_IN, _CTL_OUT
    guard("batch_supervisor")
    _CTL_IN, _CTL_OUT = os.dup(0), os.dup(1)
    program = _serve()
    if program is None:
        os._exit(0)
    _start_program(*program)


if __name__ == "__main__":  # run with -c; importing this module does nothing
    _main()
