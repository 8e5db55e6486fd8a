"""BFCL's AST checker and its data, from the pinned bfcl-eval wheel, loaded by path.

The wheel (``pip download --no-deps bfcl-eval==2026.3.23``) is downloaded once into
``~/.cache/referee-tests/`` (``REFEREE_TEST_CACHE`` overrides) and checked against its sha256. It
ships BFCL's questions (``bfcl_eval/data/BFCL_v4_*.json``: the user turn and the function
documents) and their possible answers (``data/possible_answer/``), and
``bfcl_eval/eval_checker/ast_eval/ast_checker.py``, the checker BFCL's leaderboard scores the
non-live AST categories with. Loaded: that module and the small ones it needs (``constants.enums``,
``constants.type_mappings``, the Java/JavaScript type converters), under their own names in empty
parent packages. One module is put in place instead of BFCL's: ``constants.model_config``, which
imports every model handler (openai, anthropic, vllm...) for one table the checker reads only to
rename a dotted function name for models whose API has no dots; here no model renames (each entry
says ``underscore_to_dot=False``), so the checker compares the names as the data writes them.
"""

from __future__ import annotations

import json
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

from pinned_download import pinned_file

VERSION = "2026.3.23"
WHEEL = f"bfcl_eval-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
_MODULES = (
    "constants.enums",
    "constants.type_mappings",
    "eval_checker.ast_eval.type_convertor.java_type_converter",
    "eval_checker.ast_eval.type_convertor.js_type_converter",
    "eval_checker.ast_eval.ast_checker",
)


def wheel_path() -> Path:
    return pinned_file("bfcl-eval", VERSION, WHEEL, WHEEL_SHA256)


def _package(name: str) -> None:
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__path__ = []
        sys.modules[name] = module


class _NoRename:
    underscore_to_dot = False


def checker() -> Any:
    """``bfcl_eval.eval_checker.ast_eval.ast_checker`` (``ast_checker(functions, output,
    possible_answer, Language.PYTHON, category, model_name)``)."""
    wanted = "bfcl_eval.eval_checker.ast_eval.ast_checker"
    if wanted in sys.modules:
        return sys.modules[wanted]
    config = types.ModuleType("bfcl_eval.constants.model_config")
    config.MODEL_CONFIG_MAPPING = _AnyModel()  # type: ignore[attr-defined]
    with zipfile.ZipFile(wheel_path()) as wheel:
        for dotted in ("bfcl_eval", "bfcl_eval.constants", "bfcl_eval.eval_checker",
                       "bfcl_eval.eval_checker.ast_eval",
                       "bfcl_eval.eval_checker.ast_eval.type_convertor"):  # fmt: skip
            _package(dotted)
        sys.modules[config.__name__] = config
        for name in _MODULES:
            path = "bfcl_eval/" + name.replace(".", "/") + ".py"
            module = types.ModuleType(f"bfcl_eval.{name}")
            module.__file__ = path
            sys.modules[module.__name__] = module
            exec(compile(wheel.read(path).decode(), path, "exec"), module.__dict__)
    return sys.modules[wanted]


class _AnyModel(dict):  # type: ignore[type-arg]
    def __missing__(self, key: str) -> _NoRename:
        return _NoRename()


def entries(category: str) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(question with its ``function`` documents, ground truth) of one category, e.g.
    ``simple_python``, ``multiple``, ``parallel``, ``parallel_multiple``."""
    with zipfile.ZipFile(wheel_path()) as wheel:
        questions = wheel.read(f"bfcl_eval/data/BFCL_v4_{category}.json").decode()
        answers = wheel.read(f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json").decode()
    truth = {row["id"]: row["ground_truth"] for row in map(json.loads, answers.splitlines())}
    rows = [json.loads(line) for line in questions.splitlines() if line.strip()]
    return [(row, truth[row["id"]]) for row in rows]
