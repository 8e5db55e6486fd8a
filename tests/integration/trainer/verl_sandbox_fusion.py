"""veRL 0.9.1's own SandboxFusion reward code, loaded from its released wheel without torch or ray.

``verl/utils/reward_score/__init__.py`` (``default_compute_score``, which sends ``codecontests``,
``apps``, ``codeforces`` and ``taco`` rows to ``sandbox_fusion.compute_score``) and its
``sandbox_fusion`` package (``__init__.py``, ``utils.py``) run as shipped; they need only the
standard library, ``requests`` and ``verl.utils.import_utils`` (standard library only). What is
stubbed: the ``verl`` and ``verl.utils`` package ``__init__`` files, which import torch, ray and
tensordict; they are replaced by empty packages whose ``__path__`` is the wheel's own folders, so
every module above is veRL's file. The concurrency is veRL's default,
``reward.sandbox_fusion.max_concurrent`` read from its ``verl/trainer/config/reward/reward.yaml``;
veRL's reward loader shares one semaphore of that size between every call
(``verl/trainer/ppo/reward.py``: a ``multiprocessing.Manager().Semaphore``; a
``threading.Semaphore`` here, the same bound inside one process).

    with verl_modules() as verl:
        verl.default_compute_score("codecontests", solution, tests_json,
                                   sandbox_fusion_url=url + "/run_code",
                                   concurrent_semaphore=verl.semaphore())
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
import threading
import types
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .peer_code_compat import peer_package

__all__ = [
    "VERL_SHA256",
    "VERL_VERSION",
    "VerlSandboxFusion",
    "problem",
    "score_all",
    "verl_modules",
]

VERL_VERSION = "0.9.1"
VERL_SHA256 = "db6e6f2a8d9d5808d9ec32d357a42319fdc6967df688ff9d9810050f49bfdd14"


@dataclass(frozen=True)
class VerlSandboxFusion:
    root: Path
    reward_score: types.ModuleType
    sandbox_fusion: types.ModuleType
    utils: types.ModuleType
    max_concurrent: int
    """veRL's default ``reward.sandbox_fusion.max_concurrent``."""

    @property
    def default_compute_score(self) -> Callable[..., Any]:
        fn: Callable[..., Any] = self.reward_score.default_compute_score
        return fn

    def semaphore(self, size: int | None = None) -> threading.Semaphore:
        return threading.Semaphore(size or self.max_concurrent)


def problem(i: int, tests: int = 3) -> tuple[str, str, str]:
    """Problem ``i``, print a*b + i: (a correct completion, a wrong one, veRL's test cases)."""
    right = f"```python\na, b = map(int, input().split())\nprint(a * b + {i})\n```"
    wrong = f"```python\na, b = map(int, input().split())\nprint(a * b + {i + 1})\n```"
    pairs = [(t + 2, i + t) for t in range(tests)]
    cases = {
        "inputs": [f"{a} {b}\n" for a, b in pairs],
        "outputs": [f"{a * b + i}\n" for a, b in pairs],
    }
    return right, wrong, json.dumps(cases)


def score_all(
    verl: VerlSandboxFusion,
    url: str,
    completions: list[str],
    tests: list[str],
    *,
    callers: int | None = None,
    max_concurrent: int | None = None,
) -> list[float]:
    """Score every completion with veRL's ``default_compute_score`` (a ``codecontests`` row),
    ``callers`` at once (default: all, as veRL's reward loop scores trajectories as they
    complete), every call through one semaphore of ``max_concurrent`` (default: veRL's)."""
    semaphore = verl.semaphore(max_concurrent)

    def one(args: tuple[str, str]) -> float:
        completion, cases = args
        score = verl.default_compute_score(
            "codecontests",
            completion,
            cases,
            sandbox_fusion_url=url + "/run_code",
            concurrent_semaphore=semaphore,
            memory_limit_mb=1024,
        )
        return float(score)

    with ThreadPoolExecutor(callers or len(completions)) as pool:
        return list(pool.map(one, zip(completions, tests, strict=True)))


def _default_max_concurrent(root: Path) -> int:
    config = yaml.safe_load((root / "verl/trainer/config/reward/reward.yaml").read_text())
    return int(config["sandbox_fusion"]["max_concurrent"])


@contextmanager
def verl_modules() -> Iterator[VerlSandboxFusion]:
    """veRL's modules in ``sys.modules`` for the duration (restored after)."""
    root = peer_package("verl", VERL_VERSION)
    [wheel] = list((root / "wheel").glob("*.whl"))
    got = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert got == VERL_SHA256, f"{wheel.name}: sha256 {got}, pinned {VERL_SHA256}"
    saved = {k: v for k, v in sys.modules.items() if k == "verl" or k.startswith("verl.")}
    for name in saved:
        del sys.modules[name]
    try:
        for name, folder in (("verl", root / "verl"), ("verl.utils", root / "verl/utils")):
            package = types.ModuleType(name, "stub: veRL's __init__ imports torch and ray")
            package.__path__ = [str(folder)]
            sys.modules[name] = package
        reward_score = importlib.import_module("verl.utils.reward_score")
        sandbox_fusion = importlib.import_module("verl.utils.reward_score.sandbox_fusion")
        utils = importlib.import_module("verl.utils.reward_score.sandbox_fusion.utils")
        for module in (reward_score, sandbox_fusion, utils):
            assert module.__file__ is not None and module.__file__.startswith(str(root))
        yield VerlSandboxFusion(
            root, reward_score, sandbox_fusion, utils, _default_max_concurrent(root)
        )
    finally:
        for name in [k for k in sys.modules if k == "verl" or k.startswith("verl.")]:
            del sys.modules[name]
        sys.modules.update(saved)
