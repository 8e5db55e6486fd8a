"""The sandbox's caps: a stderr flood is stopped as a stdout flood is, a run's text is cut to
fit a response body once JSON-escaped, and a Python program sees the standard library only."""

from __future__ import annotations

import json

from referee.sandbox import BwrapBackend, Limits, RunStatus, run_program
from referee.sandbox.languages import available_languages, get_language
from referee.sandbox.process_io import cut_for_json

MIB = 1024 * 1024


def test_a_stderr_flood_is_stopped_at_the_output_cap(backend: BwrapBackend) -> None:
    source = "import sys\nwhile True:\n    sys.stderr.write('x' * 65536)\n"
    limits = Limits(wall_time_s=60.0, output_bytes=MIB)
    result = run_program(source, "python", backend, "", limits)
    assert result.status is RunStatus.OUTPUT_LIMIT, result
    assert "stderr exceeded" in result.message
    assert result.stderr_truncated and len(result.stderr) <= limits.stderr_bytes


def test_python_sees_the_stdlib_and_the_chosen_packages_only(backend: BwrapBackend) -> None:
    source = (
        "import json, os, sqlite3, sys, decimal\n"
        "sites = [p for p in sys.path if p.endswith(('site-packages', 'dist-packages'))]\n"
        "print(json.dumps({p: os.listdir(p) for p in sites if os.path.isdir(p)}))\n"
    )
    result = run_program(source, "python", backend, "", Limits(wall_time_s=20.0))
    assert result.status is RunStatus.OK, result
    shown = json.loads(result.stdout)
    language = get_language("python")
    chosen = {t.rsplit("/", 1)[1] for _, t in language.binds}  # pytest, numpy and their needs
    assert {"pytest", "numpy"} <= chosen
    assert shown and all(set(entries) <= chosen for entries in shown.values()), shown
    # the interpreter's own site-packages: the chosen packages alone, nothing else of the host
    assert any(set(shown[p]) == chosen for p in set(shown) & set(language.hidden_dirs))


def test_compiled_go_and_rust_programs_run_without_their_toolchain() -> None:
    for name in ("go", "rust"):
        if name in available_languages():
            language = get_language(name)
            assert language.run_toolchain_dirs == (), name


def test_text_is_cut_to_fit_its_json_budget() -> None:
    text = "\n" * (8 * MIB)
    cut, was_cut = cut_for_json(text, 8 * MIB)
    assert was_cut and len(json.dumps(cut)) - 2 <= 8 * MIB
    assert len(cut) > 3 * MIB  # about half of it: two bytes of JSON per newline
    assert cut_for_json("fine", 8 * MIB) == ("fine", False)
