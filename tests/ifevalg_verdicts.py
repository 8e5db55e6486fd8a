"""Records open-instruct's own IFEvalG verdicts on the 29 instruction ids it adds to IFEval's
into ``tests/data/ifevalg_verdicts.jsonl``, which tests/unit/verifiers/test_ifevalg_instructions.py
checks referee against.

open-instruct is not on PyPI, so CI cannot load it; this script runs it where a checkout (or an
exported tree) of allenai/open-instruct is at hand::

    python -m tests.ifevalg_verdicts /path/to/open-instruct [COMMIT]

It loads ``open_instruct/IFEvalG/{instructions_util,instructions,instructions_registry}.py`` by
path and checks each response as open-instruct's ``IFEvalVerifier`` does: the instruction built
from its id (``build_description(**kwargs)``), ``check_following`` on the response with its
thinking section removed, nothing followed when that is empty. Two settings are made the same on
both sides, as tests/ifeval_peer.py does for lm-eval: nltk's sentence split inside
``word_tokenize`` is referee's Punkt (``text_tools.sentence_tokenizer``; no Punkt data is
downloaded), and ``nltk.download`` does nothing. Responses come from a fixed seed: pieces each
check counts, and for each id answers built to follow it, then changed.
"""

from __future__ import annotations

import importlib.util
import random
import sys
import types
from pathlib import Path
from typing import Any

from tests.open_instruct_peer import checkout_commit, remove_thinking_section, write_verdicts

OUT = Path(__file__).parent / "data" / "ifevalg_verdicts.jsonl"
WORDS = ["cat", "dog", "apple", "level", "noon", "river", "The", "A", "we", "run", "blue", "sun"]
PIECES = [
    *WORDS,
    "Cat",
    "DOG",
    "-",
    " - ",
    "[cat]",
    "[dog]",
    "<<I am>>",
    "<<at",
    "home>>",
    "***",
    "\n***\n",
    "\n\n",
    ".",
    "!",
    "?",
    "Dr. Who",
    "e.g.",
    "3.14",
    "******",
    "Hello world.",
    "It runs fast.",
    "Cats sleep.",
    "We run home!",
    "</think>",
    "<answer>",
    "</answer>",
]
PROMPT = "Write a short note about the river"


def _random(rng: random.Random) -> str:
    parts = [rng.choice(PIECES) for _ in range(rng.choice([1, 2, 4, 7, 12, 20]))]
    return rng.choice([" ", "", "\n", " "]).join(parts)


def _sentences(rng: random.Random, n: int, words: int, first: str = "", last: str = "") -> str:
    out = []
    for _ in range(n):
        body = [rng.choice(WORDS).lower() for _ in range(words)]
        if first:
            body[0] = first
        if last:
            body[-1] = last
        out.append(" ".join(body) + rng.choice([".", "!", "?"]))
    return " ".join(out)


def _case(iid: str, rng: random.Random) -> tuple[dict[str, Any], str]:
    """Kwargs for ``iid`` and a response built to follow it (often, not always)."""
    kw = rng.choice(WORDS)
    if iid == "copy:repeat_phrase":
        phrase = "the quick brown fox"
        n = rng.choice([2, 3])
        copies = [f"the {rng.choice(WORDS)} brown fox" for _ in range(n)]
        return {"phrase": phrase, "small_n": n}, " and ".join(copies) + "."
    if iid in ("copy:copy", "copy:copying_simple"):
        return {"prompt_to_repeat": PROMPT}, rng.choice([PROMPT, PROMPT.upper(), PROMPT + " ok"])
    if iid == "new:copy_span_idx":
        a = rng.randint(1, 10)
        b = rng.randint(a + 1, len(PROMPT))
        return {"prompt_to_repeat": PROMPT, "n_start": a, "n_end": b}, PROMPT[a:b]
    if iid == "detectable_format:sentence_hyphens":
        return {}, "-".join(_sentences(rng, 1, 3).split(". ")) if rng.random() < 0.5 else "A.-B."
    if iid == "keywords:no_adjacent_consecutive":
        return {}, " ".join(rng.choice(["apple", "cat", "egg", "banana", "dog"]) for _ in range(4))
    if iid == "detectable_format:square_brackets":
        return {}, " ".join(f"[{w}]" for w in rng.sample(WORDS, 3))
    if iid == "keywords:word_once":
        return {"keyword": kw}, f"{_sentences(rng, 2, 3)} {kw} here."
    if iid == "keywords:word_count_different_numbers":
        f = rng.choice([0, 1, 2, 3])
        rel = rng.choice(["less than", "at least"])
        text = " ".join([kw] * rng.choice([0, 1, 2, 3]))
        return {"keyword": kw, "frequency": f, "relation": rel}, text
    if iid == "keywords:exclude_word_harder":
        return {"keyword": kw}, _sentences(rng, 2, 4)
    if iid == "paragraphs:paragraphs":
        return {}, "First part.\n***\nSecond part."
    if iid == "paragraphs:paragraphs2":
        return {}, "First part.\n\nSecond part."
    if iid == "first_word:first_word_sent":
        return {"first_word": "the"}, _sentences(rng, 2, 3, first=rng.choice(["the", "The"]))
    if iid == "first_word:first_word_answer":
        return {"first_word": "Sure"}, "Sure " + _sentences(rng, 1, 3)
    if iid == "last_word:last_word_sent":
        return {"last_word": "sun"}, _sentences(rng, 2, 3, last="sun")
    if iid == "last_word:last_word_answer":
        return {"last_word": "sun"}, _sentences(rng, 1, 3, last="sun")
    if iid == "detectable_format:bigram_wrapping":
        return {}, "<<I am>> <<at home>> <<with my>> <<cute dog>>"
    if iid == "copy:copying_multiple":
        n = rng.choice([2, 3])
        return {"prompt_to_repeat": PROMPT, "N": n}, "\n******\n".join([PROMPT] * n)
    if iid == "punctuation:punctuation_dot":
        return {}, "no dots here at all"
    if iid == "punctuation:punctuation_exclamation":
        return {}, "no exclamation here."
    if iid == "count:lowercase_counting":
        return {"N": rng.choice([2, 3, 5])}, "Cat DOG sun"
    if iid == "letters:letter_counting":
        relation = rng.choice(["less than", "at least"])
        return {"N": rng.choice([5, 10]), "relation": relation}, "abc de"
    if iid == "letters:letter_counting2":
        return {"letter": "a", "let_frequency": 2, "let_relation": "at least"}, "a banana"
    if iid == "count:counting_composition":
        s, w = rng.choice([2, 3]), rng.choice([2, 3])
        paragraph = " ".join(" ".join(["cat"] * (w - 1)) + "." for _ in range(s))
        return {"n_sent": s, "n_words": w}, "\n***\n".join([paragraph] * 3)
    if iid == "count:count_unique":
        return {}, " ".join(rng.sample(WORDS, 5))
    if iid == "count:count_increment_word":
        return {"keyword1": "cat", "keyword2": "dog"}, "cat dog dog"
    if iid == "keywords:palindrome":
        return {}, "a level field"
    if iid == "keywords:keyword_specific_position":
        return {"keyword": "river", "n": 2, "m": 2}, "I swim. The river is cold."
    if iid == "keywords:start_end":
        return {}, "cat and cat"
    raise AssertionError(iid)


def _changed(text: str, rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.25:
        return text + " " + _random(rng)
    if pick < 0.5:
        return _random(rng) + " " + text
    if pick < 0.65:
        return text.replace(" ", rng.choice(["  ", "\n", " - ", ". "]), 1)
    if pick < 0.8:
        return "<think>Let me think. The user wants it.</think>\n" + text
    return _random(rng)


def _load(checkout: Path) -> types.SimpleNamespace:
    import nltk

    from referee.verifiers.instructions.text_tools import sentence_tokenizer

    nltk.download = lambda *a, **k: False
    tokenizer = sentence_tokenizer()
    nltk.tokenize.sent_tokenize = lambda text, language="english": tokenizer.tokenize(text)
    for name in ("open_instruct", "open_instruct.IFEvalG"):
        sys.modules.setdefault(name, types.ModuleType(name))
    modules = {}
    for name in ("instructions_util", "instructions", "instructions_registry"):
        full = f"open_instruct.IFEvalG.{name}"
        path = checkout / "open_instruct" / "IFEvalG" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(full, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        setattr(sys.modules["open_instruct.IFEvalG"], name, module)
        spec.loader.exec_module(module)
        modules[name] = module
    import langdetect

    langdetect.DetectorFactory.seed = 0
    return types.SimpleNamespace(**modules)


def main() -> None:
    from referee.client.instruction_specs import IFEVALG_IDS

    checkout = Path(sys.argv[1])
    commit = checkout_commit(checkout)
    peer = _load(checkout)

    rng = random.Random(20261206)
    rows = []
    for iid in IFEVALG_IDS:
        seen = {True: 0, False: 0}
        for attempt in range(6000):
            if min(seen.values()) >= 30:
                break
            kwargs, built = _case(iid, rng)
            response = built if attempt % 2 == 0 else _changed(built, rng)
            answer = remove_thinking_section(response)
            instruction = peer.instructions_registry.INSTRUCTION_DICT[iid](iid)
            try:
                instruction.build_description(**kwargs)
                followed = bool(response.strip() and answer and instruction.check_following(answer))
            except Exception:  # the peer's own failure on this answer: not a verdict to record
                continue
            if seen[followed] >= 30:
                continue
            rows.append({"id": iid, "kwargs": kwargs, "response": response, "followed": followed})
            seen[followed] += 1
    write_verdicts(OUT, commit, rows)


if __name__ == "__main__":
    main()
