"""Copy KodCode's own recorded pytest verdicts, for the sandbox's test_kodcode_verdicts.py.

KodCode's repository (github.com/KodCode-AI/kodcode, Apache-2.0) ships, under ``demo/``, the
self-verification trials of its pipeline: for each generated question, a model's
``solution.py`` and ``test_solution.py`` (a pytest file that imports it from ``solution``), and
``test_result.txt``, the verdict its ``pipeline/run_test.sh`` wrote: ``Pass`` when ``pytest
--rootdir=.`` exited 0 within 30 s, ``Fail`` (or ``Fail - Timed Out``) otherwise. This copies the
trials of the ``algorithm``, ``leetcode`` and ``prefill`` demos whose test file and solution use
only the standard library, pytest and numpy (what the sandbox's Python has by default), with
their verdicts, into tests/data/kodcode_verdicts.jsonl (the header names the commit). Nothing of
KodCode runs here: the verdicts are the ones its pipeline recorded. To copy them again:

    git clone https://github.com/KodCode-AI/kodcode /tmp/kodcode
    python tests/kodcode_verdicts.py /tmp/kodcode
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).parent / "data" / "kodcode_verdicts.jsonl"
DEMOS = (
    "demo/KodCode_algorithm_100_1741212598",
    "demo/KodCode_leetcode_100_1741214688",
    "demo/KodCode_prefill_200_1741214325",
)
AVAILABLE = set(sys.stdlib_module_names) | {"pytest", "_pytest", "numpy", "solution"}


def _imports(source: str) -> set[str] | None:
    """The top-level modules ``source`` imports (None: it does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def record(checkout: Path) -> None:
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    rows = []
    for demo in DEMOS:
        for result in sorted((checkout / demo).glob("self_verification_*/*/*/test_result.txt")):
            trial = result.parent
            verdict = result.read_text(encoding="utf-8").splitlines()[0].strip()
            solution = (trial / "solution.py").read_text(encoding="utf-8")
            test = (trial / "test_solution.py").read_text(encoding="utf-8")
            used = [_imports(solution), _imports(test)]
            if any(u is None or not u <= AVAILABLE for u in used):
                continue  # pandas, a syntax error KodCode's pytest reports as a failure, ...
            rows.append(
                {
                    "trial": str(trial.relative_to(checkout)),
                    "solution": solution,
                    "test": test,
                    "kodcode_verdict": verdict,
                }
            )
    header = {
        "source": "github.com/KodCode-AI/kodcode",
        "commit": commit,
        "demos": list(DEMOS),
        "rows": len(rows),
        "verdict": "pipeline/run_test.sh: Pass when pytest --rootdir=. exits 0 within 30 s",
    }
    with OUT.open("w", encoding="utf-8") as fh:
        for item in (header, *rows):
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    print(f"{len(rows)} trials -> {OUT}")


if __name__ == "__main__":
    record(Path(sys.argv[1]))
