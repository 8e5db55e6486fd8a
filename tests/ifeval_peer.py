"""lm-eval's IFEval checkers, from the pinned lm-eval wheel, loaded by path.

The wheel is downloaded once by pip (``pip download --no-deps lm-eval==0.4.13``) into
``~/.cache/referee-tests/`` (``REFEREE_TEST_CACHE`` overrides) and checked against its sha256.
Only ``lm_eval/tasks/ifeval/{instructions_util,instructions,instructions_registry,utils}.py`` are
loaded, under their own module names, with empty parent packages (lm-eval's ``__init__`` pulls in
the whole harness).

Two things lm-eval needs from outside are put in place here, the same for both sides:
- its import calls ``nltk.download("punkt_tab")``; nothing is downloaded in tests, so the call is
  a no-op while the modules load;
- where nltk has no Punkt English data (none of PyPI's packages ships it), lm-eval's
  sentence tokenizer and ``nltk.word_tokenize``'s sentence split are given the tokenizer
  referee's checks use (``text_tools.sentence_tokenizer``), so both count with the same Punkt.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import logging
import sys
import tempfile
import types
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

VERSION = "0.4.13"
WHEEL = f"lm_eval-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "5daaa1973bf874005f64f28d3834b875f6886f0d6475878e6a6c821994a5286a"
_MODULES = ("instructions_util", "instructions", "instructions_registry", "utils")
_PACKAGE = "lm_eval.tasks.ifeval"


def _pinned_download() -> Any:
    """tests/pinned_download.py, loaded by path (benchmarks load this module from its file)."""
    spec = importlib.util.spec_from_file_location(
        "referee_pinned_download", Path(__file__).resolve().parent / "pinned_download.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wheel_path() -> Path:
    return Path(_pinned_download().pinned_file("lm-eval", VERSION, WHEEL, WHEEL_SHA256))


@contextlib.contextmanager
def _no_download() -> Iterator[None]:
    import nltk

    real = nltk.download
    nltk.download = lambda *a, **k: False
    try:
        yield
    finally:
        nltk.download = real


def load() -> types.SimpleNamespace:
    """lm-eval's ``instructions_registry`` and ``utils`` modules (and the rest), loaded."""
    sources: dict[str, str] = {}
    with zipfile.ZipFile(wheel_path()) as whl:
        for name in _MODULES:
            sources[name] = whl.read(f"lm_eval/tasks/ifeval/{name}.py").decode()
    root = Path(tempfile.mkdtemp(prefix="lm_eval_ifeval_"))
    for parent in ("lm_eval", "lm_eval.tasks", _PACKAGE):
        if parent not in sys.modules:
            module = types.ModuleType(parent)
            module.__path__ = []
            sys.modules[parent] = module
    loaded: dict[str, Any] = {}
    # lm-eval logs an error for every text langdetect finds no features in (and counts the
    # instruction as followed, as referee does): not news here
    logging.getLogger(f"{_PACKAGE}.instructions").setLevel(logging.CRITICAL)
    with _no_download(), contextlib.redirect_stdout(io.StringIO()):
        for name in _MODULES:
            path = root / f"{name}.py"
            path.write_text(sources[name])
            spec = importlib.util.spec_from_file_location(f"{_PACKAGE}.{name}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            setattr(sys.modules[_PACKAGE], name, module)
            spec.loader.exec_module(module)
            loaded[name] = module
    return types.SimpleNamespace(**loaded)


@contextlib.contextmanager
def same_punkt(peer: types.SimpleNamespace) -> Iterator[str]:
    """Both sides on the same Punkt parameters; yields which ones."""
    import nltk.tokenize

    from referee.verifiers.instructions.text_tools import sentence_model, sentence_tokenizer

    model = sentence_model()
    if model == "punkt english":  # nltk has the data: lm-eval loads it itself
        yield model
        return
    tokenizer = sentence_tokenizer()
    util = peer.instructions_util
    real_get, real_sent = util._get_sentence_tokenizer, nltk.tokenize.sent_tokenize
    util._get_sentence_tokenizer = lambda: tokenizer
    nltk.tokenize.sent_tokenize = lambda text, language="english": tokenizer.tokenize(text)
    try:
        yield model
    finally:
        util._get_sentence_tokenizer, nltk.tokenize.sent_tokenize = real_get, real_sent


def verdicts(
    peer: types.SimpleNamespace,
    response: str,
    instructions: list[dict[str, Any]],
    prompt: str = "",
    mode: str = "strict",
) -> list[bool]:
    """lm-eval's per-instruction verdicts for ``response``."""
    inp = peer.utils.InputExample(
        key=0,
        instruction_id_list=[i["id"] for i in instructions],
        prompt=prompt,
        kwargs=[dict(i.get("kwargs") or {}) for i in instructions],
    )
    fn = (
        peer.utils.test_instruction_following_strict
        if mode == "strict"
        else peer.utils.test_instruction_following_loose
    )
    return list(fn(inp, response).follow_instruction_list)
