"""What tests/tulu_verdicts.py and tests/ifevalg_verdicts.py share: open-instruct's own reading
of a response (``ground_truth_utils.remove_thinking_section``), the commit of the checkout the
verdicts come from, and the verdict file's layout (a header line, then one row a line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def remove_thinking_section(prediction: str) -> str:
    """open-instruct's steps (``ground_truth_utils.remove_thinking_section``)."""
    prediction = prediction.replace("<|assistant|>", "").strip()
    prediction = prediction.split("</think>")[-1]
    prediction = prediction.replace("<answer>", "").replace("</answer>", "")
    return prediction.strip()


def checkout_commit(checkout: Path) -> str:
    """The checkout's commit; for an exported tree without ``.git``, the second argument."""
    found = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return found.stdout.strip() if found.returncode == 0 else sys.argv[2]


def write_verdicts(out: Path, commit: str, rows: list[dict[str, Any]]) -> None:
    with out.open("w") as fh:
        fh.write(json.dumps({"open_instruct_commit": commit, "rows": len(rows)}) + "\n")
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} rows from open-instruct {commit} -> {out}")
