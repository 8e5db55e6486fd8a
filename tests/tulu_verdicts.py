"""Records open-instruct's own verdicts on Tülu 3's IFEval constraints (``func_name`` rows) into
``tests/data/tulu_ifeval_verdicts.jsonl``, which tests/unit/verifiers/test_tulu_instructions.py
checks referee against.

open-instruct is not on PyPI, so CI cannot load it; this script runs it where a checkout of
allenai/open-instruct is at hand::

    python -m tests.tulu_verdicts /path/to/open-instruct   # writes the file, prints the commit
    python -m tests.tulu_verdicts /path/to/exported/tree COMMIT   # a tree without .git

It loads ``open_instruct/if_functions.py`` by path (the module needs only langdetect) and calls
each function as open-instruct's ``IFEvalVerifierOld`` does: on the response with its thinking
section removed (``remove_thinking_section``), with the row's non-None arguments. The responses
are generated from a fixed seed out of pieces that each function counts (bullets, ``* * *``,
placeholders, titles, capital words, sections, postscripts, quotes, commas, think blocks...).
Rows where open-instruct raises (a missing argument, langdetect on text with no features) are
left out; so are empty answers (referee: not followed, on purpose) and options given as one
string (open-instruct tests each character of it).
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from typing import Any

from tests.open_instruct_peer import checkout_commit, remove_thinking_section, write_verdicts

OUT = Path(__file__).parent / "data" / "tulu_ifeval_verdicts.jsonl"

PIECES = [
    "hello",
    "world",
    "Hello",
    "NASA",
    "AI",
    "the",
    "The",
    "cat",
    "apple",
    "Apple",
    "banana",
    "Dr.",
    "e.g.",
    "ok.",
    "Why?",
    "Yes!",
    ",",
    ".",
    "\n",
    "\n\n",
    "\n* * *\n",
    "* * *",
    "\n* point",
    "\n- dash",
    "\n  * indented",
    "[name]",
    "[address]",
    "[",
    "]",
    "<<A Title>>",
    "<<",
    ">>",
    "*highlight*",
    "**bold**",
    "*",
    "SECTION 1",
    "Section 2",
    "section",
    "PARAGRAPH 3",
    "P.S. remember",
    "P.S.",
    "P.P.S",
    "******",
    '"',
    "My answer is yes.",
    "My answer is no.",
    "{",
    "}",
    '{"key": "value"}',
    "[1, 2]",
    "Is there anything else I can help with?",
    "The end.",
    "</think>",
    "<think>",
    "<answer>",
    "</answer>",
    "<|assistant|>",
    "Bonjour le monde, comment allez-vous aujourd'hui?",
    "Das ist ein Haus.",
    "zzzz",
    "123",
    "lowercase words only here",
    "ALL CAPS WORDS HERE",
]

KEYWORDS = ["cat", "apple", "hello", "NASA", "banana", "dog", "the"]
QUANTIFIERS = ["at least", "at most", "around"]
PROMPTS = ["Write a poem.", "hello world", "The cat"]


def _response(rng: random.Random) -> str:
    n = rng.choice([1, 2, 3, 5, 8, 13, 21, 40])
    parts = [rng.choice(PIECES) for _ in range(n)]
    joiner = rng.choice([" ", " ", "", "\n"])
    text = joiner.join(parts)
    if rng.random() < 0.15:
        text = rng.choice(PROMPTS) + " " + text
    if rng.random() < 0.1:
        text = '"' + text + '"'
    if rng.random() < 0.1:
        text = text.lower()
    if rng.random() < 0.1:
        text = text.upper()
    if rng.random() < 0.1:
        text = "<think>I think, AND THINK, about [this].</think>" + text
    return text


def _kwargs(func: str, rng: random.Random) -> dict[str, Any]:
    count = rng.choice([1, 2, 3, 5, 10, 20])
    q = rng.choice(QUANTIFIERS)
    table: dict[str, dict[str, Any]] = {
        "verify_keywords": {"keyword_list": rng.sample(KEYWORDS, rng.choice([1, 2, 3]))},
        "verify_keyword_frequency": {"word": rng.choice(KEYWORDS), "N": rng.choice([0, 1, 2])},
        "validate_forbidden_words": {"forbidden_words": rng.sample(KEYWORDS, 2)},
        "verify_letter_frequency": {"letter": rng.choice("aeAtz"), "N": rng.choice([0, 1, 2, 3])},
        "validate_response_language": {"language": rng.choice(["en", "fr", "de"])},
        "verify_paragraph_count": {"N": rng.choice([1, 2, 3])},
        "validate_word_constraint": {"N": count, "quantifier": q},
        "verify_sentence_constraint": {"N": count, "quantifier": q},
        "validate_paragraphs": {},
        "verify_postscript": {"postscript_marker": rng.choice(["P.S.", "P.P.S"])},
        "validate_placeholders": {"N": rng.choice([1, 2, 3])},
        "verify_bullet_points": {"N": rng.choice([1, 2, 3])},
        "validate_title": {},
        "validate_choice": {
            "options": rng.choice(
                [["My answer is yes.", "My answer is no."], ["apple", "banana"], ["zzzz"]]
            )
        },
        "validate_highlighted_sections": {"N": rng.choice([1, 2, 3])},
        "validate_sections": {
            "N": rng.choice([1, 2]),
            "section_splitter": rng.choice(["SECTION", "Section", "PARAGRAPH"]),
        },
        "validate_json_format": {},
        "validate_repeat_prompt": {"original_prompt": rng.choice(PROMPTS)},
        "validate_two_responses": {},
        "validate_uppercase": {},
        "validate_lowercase": {},
        "validate_frequency_capital_words": {"N": count, "quantifier": q},
        "validate_end": {"end_phrase": rng.choice(["The end.", "help with?", "zzzz"])},
        "validate_quotation": {},
        "validate_no_commas": {},
    }
    if func == "validate_paragraphs":
        paragraphs = rng.choice([1, 2, 3])
        first = rng.choice(["hello", "The", "cat", "Hello"])
        return {"N": paragraphs, "first_word": first, "i": rng.randint(1, paragraphs)}
    return table[func]


def main() -> None:
    checkout = Path(sys.argv[1])
    spec = importlib.util.spec_from_file_location(
        "oi_if_functions", checkout / "open_instruct" / "if_functions.py"
    )
    assert spec is not None and spec.loader is not None
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    commit = checkout_commit(checkout)
    functions = peer.IF_FUNCTIONS_MAP
    peer.langdetect.DetectorFactory.seed = 0  # as referee seeds it: the same verdict every call

    rng = random.Random(20261206)
    rows = []
    for func in sorted(functions):
        seen = {True: 0, False: 0}
        for _ in range(20000):
            if min(seen.values()) >= 40:
                break
            response = _response(rng)
            kwargs = _kwargs(func, rng)
            answer = remove_thinking_section(response)
            if not answer:
                continue
            try:
                followed = bool(functions[func](answer, **kwargs))
            except Exception:  # langdetect on featureless text, a missing argument
                continue
            if seen[followed] >= 40:
                continue
            rows.append({"func_name": func, **kwargs, "response": response, "followed": followed})
            seen[followed] += 1
    write_verdicts(OUT, commit, rows)


if __name__ == "__main__":
    main()
