"""Question-answering rewards as peers ship them, each one file of a pinned wheel that imports
only the standard library, loaded by path alone (no package ``__init__``):

* veRL's Search-R1 reward, ``verl/utils/reward_score/search_r1_like_qa_em.py`` (the verl wheel
  tests/toolrl_peer.py pins): ``compute_score`` (exact match of the last ``<answer>`` block,
  a quarter past 10 tags) and ``compute_score_subem``, what veRL's ``default_compute_score``
  runs for its ``searchR1_*`` data sources;
* lm-eval's copy of SQuAD v1.1's official token F1, ``lm_eval/tasks/qasper/metrics.py``
  (``f1_abstractive``; the lm-eval wheel tests/ifeval_peer.py pins);
* veRL's geometry3k format reward, ``verl/utils/reward_score/geo3k.py``'s ``format_reward``;
* veRL's DAPO math reward, ``verl/utils/reward_score/math_dapo.py`` (``compute_score``: the
  answer after the last ``Answer:`` of the response's last 300 characters, 1 right, -1 wrong),
  what ``default_compute_score`` runs for its math_dapo, math and aime* data sources.
"""

from __future__ import annotations

import types
import zipfile
from typing import Any

import ifeval_peer
import toolrl_peer
from pinned_download import pinned_file

_loaded: dict[str, types.ModuleType] = {}


def _module(wheel: str, member: str) -> Any:
    if member not in _loaded:
        with zipfile.ZipFile(wheel) as archive:
            source = archive.read(member).decode()
        module = types.ModuleType(member.replace("/", "_").removesuffix(".py"))
        module.__file__ = f"{wheel}/{member}"
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        _loaded[member] = module
    return _loaded[member]


def search_r1() -> Any:
    """veRL's ``search_r1_like_qa_em`` module."""
    wheel = pinned_file("verl", toolrl_peer.VERSION, toolrl_peer.WHEEL, toolrl_peer.WHEEL_SHA256)
    return _module(str(wheel), "verl/utils/reward_score/search_r1_like_qa_em.py")


def math_dapo() -> Any:
    """veRL's ``math_dapo`` module."""
    wheel = pinned_file("verl", toolrl_peer.VERSION, toolrl_peer.WHEEL, toolrl_peer.WHEEL_SHA256)
    return _module(str(wheel), "verl/utils/reward_score/math_dapo.py")


def squad_f1() -> Any:
    """lm-eval's ``qasper/metrics.py``: ``f1_abstractive([prediction], [reference])``."""
    return _module(str(ifeval_peer.wheel_path()), "lm_eval/tasks/qasper/metrics.py")


def geo3k_format_reward() -> Any:
    """veRL's geometry3k format reward (``geo3k.format_reward``, the verl wheel's file). The
    file imports mathruler's grader at its top for its accuracy half, which this function does
    not call: the import is given an empty module, the function is veRL's own."""
    import sys

    wheel = pinned_file("verl", toolrl_peer.VERSION, toolrl_peer.WHEEL, toolrl_peer.WHEEL_SHA256)
    member = "verl/utils/reward_score/geo3k.py"
    if member not in _loaded:
        grader = types.ModuleType("mathruler.grader")
        grader.extract_boxed_content = grader.grade_answer = None  # type: ignore[attr-defined]
        saved = {k: sys.modules.get(k) for k in ("mathruler", "mathruler.grader")}
        sys.modules["mathruler"] = types.ModuleType("mathruler")
        sys.modules["mathruler.grader"] = grader
        try:
            _module(str(wheel), member)
        finally:
            for key, value in saved.items():
                if value is None:
                    sys.modules.pop(key, None)
                else:
                    sys.modules[key] = value
    return _loaded[member].format_reward
