"""Record open-instruct's code verdicts on its own AceCode sample, for
tests/integration/trainer/test_trl_reward.py.

open-instruct (not on PyPI) ships one AceCode-87K row in its test data
(``open_instruct/test_data/acecode_sample.jsonl``: a LeetCode-style question, its 19 assert
tests, 80 model completions with AceCode's pass rate each), and its own test
(``code_utils/test_code_utils.py``) checks its code verifier against it. The completions are
bare programs, no fenced block. This copies that row's tests and completions and records, beside
AceCode's pass rate, the one open-instruct's ``get_successful_tests_fast`` gives (its code
verifier's reward with the default threshold of 0), run from a checkout, into
tests/data/acecode_verdicts.jsonl (the header names the commit). To record it again:

    git clone https://github.com/allenai/open-instruct /tmp/open-instruct
    python tests/acecode_verdicts.py /tmp/open-instruct [COMMIT]

(COMMIT: for an exported tree without ``.git``.) The checkout's ``open_instruct`` package is put
on the path (its ``__init__`` and ``code_utils`` import only the standard library).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).parent / "data" / "acecode_verdicts.jsonl"
SAMPLE = "open_instruct/test_data/acecode_sample.jsonl"


def record(checkout: Path, commit: str | None = None) -> None:
    sys.path.insert(0, str(checkout))
    from open_instruct.code_utils import code_utils  # type: ignore[import-not-found]

    if commit is None:
        commit = subprocess.run(
            ["git", "-C", str(checkout), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    row = json.loads((checkout / SAMPLE).read_text().splitlines()[0])
    tests = code_utils.decode_tests(row["test_cases"])
    lines = [
        {
            "open_instruct_commit": commit,
            "source": SAMPLE,
            "id": row["id"],
            "rows": len(row["inferences"]),
        },
        {"tests": tests},
    ]
    for inference in row["inferences"]:
        passed, _ = code_utils.get_successful_tests_fast(inference["completion"], tests)
        lines.append(
            {
                "completion": inference["completion"],
                "acecode_pass_rate": inference["pass_rate"],
                "open_instruct_pass_rate": sum(passed) / len(passed),
            }
        )
    OUT.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(f"{OUT}: {len(lines) - 2} completions, {len(tests)} tests")


if __name__ == "__main__":
    record(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
