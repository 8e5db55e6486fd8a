"""The seccomp deny-list applied to every sandboxed process, as classic BPF for ``bwrap``.

The filter allows by default and answers EPERM to system calls a program under test has no use
for and that widen the kernel's attack surface or escape isolation: debugging other processes,
mounting, namespaces, kernel keyrings, BPF, perf, module loading, reboot, swap, clock changes,
``personality`` changes (ASLR off, READ_IMPLIES_EXEC), io_uring, ``TIOCSTI`` terminal
injection, and ``clone`` with namespace flags (``clone3`` answers ENOSYS so libc falls back to
``clone``, whose flags a filter can see). System calls of other
architectures (i386/x32 entry points) kill the process (libseccomp's default for a foreign arch).

Built with libseccomp through ``pyseccomp`` (PyPI) or Debian's ``python3-seccomp``, whichever is
importable; ``bpf_program()`` returns the bytes and ``seccomp_fd()`` a memfd holding them, to
pass as ``bwrap --seccomp FD``.
"""

from __future__ import annotations

import errno
import functools
import importlib
import os
import tempfile
from typing import Any

__all__ = ["DENIED_SYSCALLS", "SeccompUnavailable", "bpf_program", "seccomp_fd"]

DENIED_SYSCALLS: tuple[str, ...] = (
    # other processes' memory and debugging
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    # mounts and the filesystem tree
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "open_by_handle_at",
    "name_to_handle_at",
    "quotactl",
    "swapon",
    "swapoff",
    # namespaces
    "unshare",
    "setns",
    # POSIX message queues outlive their processes in the IPC namespace, which the tests of
    # one program share, and cannot be listed without an mqueue mount: refused
    "mq_open",
    # kernel keyrings
    "keyctl",
    "add_key",
    "request_key",
    # kernel attack surface
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "acct",
    "syslog",
    "lookup_dcookie",
    "vhangup",
    "iopl",
    "ioperm",
    "uselib",
    "fanotify_init",
    "nfsservctl",
    # clocks
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
)

_CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
_TIOCSTI = 0x5412
_PER_LINUX = 0


class SeccompUnavailable(RuntimeError):
    """Neither ``pyseccomp`` nor ``seccomp`` (python3-seccomp) can be imported."""


def _seccomp_module() -> Any:
    for name in ("seccomp", "pyseccomp"):
        try:
            return importlib.import_module(name)
        except (ImportError, OSError):
            continue
    raise SeccompUnavailable(
        "no libseccomp binding: `pip install pyseccomp` (needs libseccomp2) or "
        "`apt-get install python3-seccomp`"
    )


@functools.cache
def bpf_program() -> bytes:
    """The compiled filter (cached: it is the same for every run)."""
    sc = _seccomp_module()
    eperm = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            flt.add_rule(eperm, name)
        except (ValueError, RuntimeError, OSError):
            continue  # not a system call on this kernel / libseccomp version
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in _CLONE_NAMESPACE_FLAGS:
        flt.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    flt.add_rule(eperm, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, _TIOCSTI))
    # libseccomp takes one comparison per argument in a rule, so the query form
    # personality(0xffffffff) is refused too; only personality(PER_LINUX) passes.
    flt.add_rule(eperm, "personality", sc.Arg(0, sc.NE, _PER_LINUX))
    with tempfile.TemporaryFile() as fh:
        flt.export_bpf(fh)
        fh.seek(0)
        data: bytes = fh.read()
    return data


def seccomp_fd() -> int:
    """A new file descriptor, positioned at 0, holding the BPF program. The caller closes it."""
    data = bpf_program()
    fd = os.memfd_create("referee-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
