"""Units of the sandbox that need no isolation: limits, statuses, drivers, selection, recipes,
the seccomp program and rewards."""

from __future__ import annotations

import resource
import signal

import pytest

from referee.sandbox import (
    CodeResult,
    LanguageUnavailable,
    Limits,
    RewardMode,
    RunResult,
    RunStatus,
    SandboxUnavailable,
    TestOutcome,
    TestResult,
    get_language,
    known_languages,
    select_backend,
)
from referee.sandbox.backend import (
    StartCounter,
    classify,
    finished_result,
    looks_like_oom,
    split_exit_status,
)
from referee.sandbox.drivers import make_nonce, parse_marked_result
from referee.sandbox.errors import ENABLE_HINT
from referee.sandbox.languages import _java_class as java_class
from referee.sandbox.models import ExecRequest
from referee.sandbox.process_io import RawOutcome, decode_output
from referee.sandbox.resource_limits import rlimits_for
from referee.sandbox.seccomp_filter import DENIED_SYSCALLS, bpf_program
from referee.sandbox.selection import backend_from_env


def raw(**kw: object) -> RawOutcome:
    base: dict[str, object] = dict(
        returncode=0,
        stdout=b"",
        stderr=b"",
        stdout_overflow=False,
        stderr_truncated=False,
        timed_out=False,
        wall_time_s=0.1,
    )
    base.update(kw)
    return RawOutcome(**base)  # type: ignore[arg-type]


def test_limits_validate_and_copy() -> None:
    limits = Limits(wall_time_s=2)
    assert limits.effective_cpu_time_s == 2
    assert limits.with_(cpu_time_s=1).effective_cpu_time_s == 1
    with pytest.raises(ValueError):
        Limits(wall_time_s=0)
    with pytest.raises(ValueError):
        Limits(memory_mb=-1)
    with pytest.raises(ValueError):
        Limits(cpus=0)
    with pytest.raises(ValueError):
        Limits(output_bytes=0)


@pytest.mark.parametrize(
    ("code", "shell", "expected"),
    [
        (0, True, (0, None)),
        (3, True, (3, None)),
        (139, True, (None, 11)),
        (-9, False, (None, 9)),
        (139, False, (139, None)),
        (None, True, (None, None)),
        (255, True, (255, None)),
    ],
)
def test_split_exit_status(
    code: int | None, shell: bool, expected: tuple[int | None, int | None]
) -> None:
    assert split_exit_status(code, shell_style=shell) == expected


def _classify(
    r: RawOutcome,
    *,
    exit_code: int | None = 0,
    sig: int | None = None,
    oom: bool = False,
    cpu: float | None = 0.01,
    limits: Limits | None = None,
) -> RunResult:
    return classify(
        r,
        limits or Limits(wall_time_s=2),
        exit_code=exit_code,
        signal=sig,
        oom_killed=oom,
        cpu_time_s=cpu,
        memory_peak_bytes=None,
    )


def test_classify_precedence() -> None:
    assert _classify(raw()).status is RunStatus.OK
    assert _classify(raw(), exit_code=1).status is RunStatus.RUNTIME_ERROR
    assert _classify(raw(), exit_code=None, sig=11).message == "killed by signal 11 (SIGSEGV)"
    assert _classify(raw(timed_out=True), exit_code=None, sig=9).status is RunStatus.TIME_LIMIT
    assert _classify(raw(), exit_code=None, sig=signal.SIGXCPU).status is RunStatus.TIME_LIMIT
    assert _classify(raw(), exit_code=None, sig=9, cpu=1.99).status is RunStatus.TIME_LIMIT
    assert _classify(raw(), exit_code=None, sig=9, cpu=0.5).status is RunStatus.RUNTIME_ERROR
    assert _classify(raw(), exit_code=None, sig=9, oom=True).status is RunStatus.MEMORY_LIMIT
    over = _classify(raw(stdout_overflow=True, timed_out=True), oom=True)
    assert over.status is RunStatus.OUTPUT_LIMIT and over.truncated


def test_finished_result_splits_then_classifies() -> None:
    limits = Limits(wall_time_s=2)
    shell = finished_result(raw(returncode=139), limits, shell_style=True, oom_killed=False)
    assert (shell.exit_code, shell.signal, shell.cpu_time_s) == (None, 11, None)
    plain = finished_result(raw(returncode=139), limits, shell_style=False, oom_killed=False)
    assert (plain.exit_code, plain.signal, plain.status) == (139, None, RunStatus.RUNTIME_ERROR)
    oom = finished_result(
        raw(returncode=1), limits, shell_style=True, oom_killed=True, memory_peak_bytes=5
    )
    assert oom.status is RunStatus.MEMORY_LIMIT and oom.memory_peak_bytes == 5


def test_looks_like_oom_reads_a_failed_runs_stderr_tail() -> None:
    assert looks_like_oom(raw(returncode=1, stderr=b"x" * 9000 + b"MemoryError"))
    assert not looks_like_oom(raw(returncode=1, stderr=b"MemoryError" + b"x" * 9000))
    assert not looks_like_oom(raw(returncode=0, stderr=b"MemoryError"))
    assert looks_like_oom(raw(returncode=None, stderr=b"out of memory"))
    assert not looks_like_oom(raw(returncode=1, stderr=b"out of memory"), (b"MemoryError",))


def test_start_counter_counts_runs_and_compiles() -> None:
    counter = StartCounter()
    for kind in ("run", "compile", "run"):
        counter.count_start(ExecRequest(argv=("true",), kind=kind))
    assert (counter.runs_started, counter.compiles_started) == (2, 1)


def test_output_decoding_never_fails() -> None:
    assert decode_output(b"a\xffb\xc3") == "a\ufffdb\ufffd"
    assert _classify(raw(stdout=b"\xfe")).stdout == "\ufffd"


def test_rlimits() -> None:
    limits = Limits(cpu_time_s=1.5, memory_mb=100, max_processes=7, open_files=9)
    table = {res: (soft, hard) for res, soft, hard in rlimits_for(limits)}
    assert table[resource.RLIMIT_CPU] == (2, 3)
    assert table[resource.RLIMIT_CORE] == (0, 0)
    assert table[resource.RLIMIT_NOFILE] == (9, 9)
    assert resource.RLIMIT_AS not in table and resource.RLIMIT_NPROC not in table
    full = {r for r, _, _ in rlimits_for(limits, address_space=True, nproc=True)}
    assert {resource.RLIMIT_AS, resource.RLIMIT_NPROC} <= full


def test_marker_parsing() -> None:
    nonce = make_nonce()
    assert len(nonce) == 32 and nonce != make_nonce()
    out = f"noise\n@@referee:{nonce}@@\n[1, 2]\n"
    assert parse_marked_result(out, nonce) == (True, "noise", "[1, 2]\n")
    assert parse_marked_result(f"\n@@referee:{nonce}@@\n", "other")[0] is False


def test_seccomp_program_builds() -> None:
    program = bpf_program()
    assert len(program) % 8 == 0 and len(program) > 8 * len(DENIED_SYSCALLS) // 2
    assert {"ptrace", "mount", "unshare", "setns", "keyctl", "bpf"} <= set(DENIED_SYSCALLS)


def test_unsafe_local_needs_explicit_opt_in() -> None:
    with pytest.raises(SandboxUnavailable) as info:
        select_backend("unsafe_local")
    message = str(info.value)
    assert "REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL" in message and "bubblewrap" in message
    assert ENABLE_HINT in message
    backend = backend_from_env(
        {"REFEREE_SANDBOX_BACKEND": "unsafe_local", "REFEREE_SANDBOX_ALLOW_UNSAFE_LOCAL": "true"}
    )
    assert backend.name == "unsafe_local"
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        select_backend("chroot")


def test_language_aliases_and_unknown_language() -> None:
    assert set(known_languages()) == {
        "python",
        "c",
        "cpp",
        "java",
        "javascript",
        "go",
        "rust",
        "bash",
    }
    assert get_language("py").name == "python"
    assert get_language("Python3").name == "python"
    with pytest.raises(LanguageUnavailable, match="cobol"):
        get_language("cobol")


def test_java_source_name_follows_public_class() -> None:
    assert java_class("import x;\npublic class Solution { }") == "Solution"
    assert java_class("public final class P1 {}") == "P1"
    assert java_class("class X { }") == "Main"


def _result(*outcomes: TestOutcome) -> CodeResult:
    return CodeResult("python", None, tuple(TestResult(i, o) for i, o in enumerate(outcomes)))


def test_rewards() -> None:
    mixed = _result(
        TestOutcome.PASSED, TestOutcome.WRONG_ANSWER, TestOutcome.PASSED, TestOutcome.TIME_LIMIT
    )
    assert mixed.passed == 2 and mixed.total == 4
    assert mixed.reward() == 0.5 and mixed.reward("fraction") == 0.5
    assert mixed.reward(RewardMode.ALL_PASS) == 0.0
    assert mixed.outcome is TestOutcome.WRONG_ANSWER
    good = _result(TestOutcome.PASSED, TestOutcome.PASSED)
    assert good.reward(RewardMode.ALL_PASS) == 1.0 and good.outcome is TestOutcome.PASSED
    assert _result().reward() == 0.0 and _result().reward(RewardMode.ALL_PASS) == 0.0
