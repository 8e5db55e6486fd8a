"""Question-answering rewards as peers ship them, each one file of a pinned wheel that imports
only the standard library, loaded by path alone (no package ``__init__``):

* veRL's Search-R1 reward, ``verl/utils/reward_score/search_r1_like_qa_em.py`` (the verl wheel
  tests/toolrl_peer.py pins): ``compute_score`` (exact match of the last ``<answer>`` block,
  a quarter past 10 tags) and ``compute_score_subem``, what veRL's ``default_compute_score``
  runs for its ``searchR1_*`` data sources;
* lm-eval's copy of SQuAD v1.1's official token F1, ``lm_eval/tasks/qasper/metrics.py``
  (``f1_abstractive``; the lm-eval wheel tests/ifeval_peer.py pins).
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


def squad_f1() -> Any:
    """lm-eval's ``qasper/metrics.py``: ``f1_abstractive([prediction], [reference])``."""
    return _module(str(ifeval_peer.wheel_path()), "lm_eval/tasks/qasper/metrics.py")
