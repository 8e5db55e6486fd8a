"""ToolRL's reward as veRL ships it: ``verl/utils/reward_score/rlla.py`` from the pinned verl wheel.

The wheel (``pip download --no-deps verl==0.9.1``) is downloaded once into
``~/.cache/referee-tests/`` (``REFEREE_TEST_CACHE`` overrides) and checked against its sha256.
``rlla.py`` is veRL's port of ToolRL's reward functions (the format reward, the tool-call
correctness reward with its name and parameter matching, ``compute_score`` for veRL's reward
manager); it imports only the standard library, so it is loaded by path alone, without veRL's
package (whose ``__init__`` pulls in torch and ray).
"""

from __future__ import annotations

import types
import zipfile
from typing import Any

from pinned_download import pinned_file

VERSION = "0.9.1"
WHEEL = f"verl-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "db6e6f2a8d9d5808d9ec32d357a42319fdc6967df688ff9d9810050f49bfdd14"
MEMBER = "verl/utils/reward_score/rlla.py"

_loaded: types.ModuleType | None = None


def rlla() -> Any:
    """The ``rlla`` module: ``compute_score(data_source, solution_str, ground_truth,
    extra_info)``, ``customize_correctness_reward_tool``, ``compute_tool_call_reward``."""
    global _loaded
    if _loaded is None:
        wheel = pinned_file("verl", VERSION, WHEEL, WHEEL_SHA256)
        with zipfile.ZipFile(wheel) as archive:
            source = archive.read(MEMBER).decode()
        module = types.ModuleType("verl_rlla_peer")
        module.__file__ = f"{wheel}/{MEMBER}"
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        _loaded = module
    return _loaded
