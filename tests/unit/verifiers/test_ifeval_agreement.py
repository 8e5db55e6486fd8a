"""referee's ``instruction_following`` checks agree with lm-eval's IFEval checkers (the pinned
lm-eval wheel's own code, ``ifeval_peer``): every instruction id, several kwargs each, on a set
of responses shaped like model outputs that follow and violate them, strict and loose."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import pytest
from ifeval_peer import load, same_punkt, verdicts

from referee.client.instruction_specs import INSTRUCTION_IDS
from referee.verifiers.instructions import check_instructions
from referee.verifiers.instructions.text_tools import detect_language

RESPONSES = [
    "",
    "   \n ",
    "hello world",
    "HELLO WORLD THIS IS ALL CAPS AND IT IS WRITTEN IN ENGLISH.",
    "Hello, world. This is a test. Another sentence here!",
    '"Quoted answer here, in full."',
    "<<My Title>>\nSome text under the title.",
    "<<   >>\nAn empty title.",
    "Sure! Here is the answer:\n* first point\n* second point\n- third point\nHope this helps.",
    "* one\n* two",
    "Paragraph one.\n\nParagraph two starts here.\n\nThird paragraph.",
    "First part ***\nSecond part *** Third part",
    "*** leading divider\nbody ***",
    "one *** *** two",
    "Section 1\nIntro text\nSection 2\nMore text\nSECTION 3 end",
    '```json\n{"a": 1, "b": [1, 2]}\n```',
    '{"key": "value"}',
    'Here is the JSON:\n{"key": "value"}',
    "Answer one\n******\nAnswer two",
    "Same\n******\nSame",
    "My answer is yes.",
    "Write a poem about cats. Here is my poem about cats, with a cat in it.",
    "Text with placeholders [name] and [address] and [date].",
    "Main text.\nP.S. I almost forgot.",
    "Main text.\np. s. lower case marker",
    "Main text.\nP.P.S extra note",
    "Main text.\nNote: the marker is a word.",
    "Thanks for reading. Is there anything else I can help with?",
    '"Is there anything else I can help with?"',
    "The *highlighted part* and **bold part** and *another*.",
    "**  ** and * * are empty highlights",
    "Bonjour, je m'appelle Pierre et j'aime le fromage et le vin rouge de Bordeaux.",
    "Hola, me llamo Juan y vivo en Madrid con mi familia desde hace muchos años.",
    "Mr. Smith went to Washington. He met Dr. Jones at 3.30 p.m. They talked. U.S.A. is big.",
    "lowercase text only with no capitals at all and more words to be sure",
    "Plenty of words here. " * 20,
    "Keywords: the cat and the dog played in the garden. Cat cat CAT.",
    "12345 !!! ???",
    'Intro line to drop\n"quoted middle"\nOutro line',
    "Some *stars* here\nand NASA, FBI and CIA are ACRONYMS in the USA. OK?",
    "Sure, here it is:\n<<A Title>>\nMY ANSWER IS ALL CAPS NOW.\nLet me know!",
    "I think so.\n\nHello there, paragraph.\n\nEnd.\n\n",
]

# Each instruction id and the kwargs it is checked with, one set an instruction (``{}``: none).
KWARGS: dict[str, list[dict[str, Any]]] = {
    "keywords:existence": [{"keywords": ["cat", "dog"]}, {"keywords": ["poem"]}],
    "keywords:frequency": [
        {"keyword": "cat", "frequency": 3, "relation": "at least"},
        {"keyword": "the", "frequency": 2, "relation": "less than"},
    ],
    "keywords:forbidden_words": [
        {"forbidden_words": ["cat", "world"]},
        {"forbidden_words": ["zebra"]},
    ],
    "keywords:letter_frequency": [
        {"letter": "e", "let_frequency": 5, "let_relation": "at least"},
        {"letter": "Z", "let_frequency": 1, "let_relation": "less than"},
    ],
    "language:response_language": [{"language": "en"}, {"language": "fr"}, {"language": "es"}],
    "length_constraints:number_sentences": [
        {"num_sentences": 3, "relation": "at least"},
        {"num_sentences": 2, "relation": "less than"},
    ],
    "length_constraints:number_paragraphs": [
        {"num_paragraphs": 3},
        {"num_paragraphs": 1},
        {"num_paragraphs": 2},
    ],
    "length_constraints:number_words": [
        {"num_words": 10, "relation": "less than"},
        {"num_words": 50, "relation": "at least"},
    ],
    "length_constraints:nth_paragraph_first_word": [
        {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "paragraph"},
        {"num_paragraphs": 1, "nth_paragraph": 1, "first_word": "Hello"},
        {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "hello"},
    ],
    "detectable_content:number_placeholders": [{"num_placeholders": 2}],
    "detectable_content:postscript": [
        {"postscript_marker": "P.S."},
        {"postscript_marker": "P.P.S"},
        {"postscript_marker": "Note"},
    ],
    "detectable_format:number_bullet_lists": [{"num_bullets": 3}, {"num_bullets": 2}],
    "detectable_format:constrained_response": [{}],
    "detectable_format:number_highlighted_sections": [{"num_highlights": 2}, {"num_highlights": 1}],
    "detectable_format:multiple_sections": [
        {"section_spliter": "Section", "num_sections": 2},
        {"section_spliter": "SECTION", "num_sections": 1},
    ],
    "detectable_format:json_format": [{}],
    "detectable_format:title": [{}],
    "combination:two_responses": [{}],
    "combination:repeat_prompt": [
        {"prompt_to_repeat": "Write a poem about cats."},
        {"prompt_to_repeat": "Sure!"},
    ],
    "startend:end_checker": [
        {"end_phrase": "Is there anything else I can help with?"},
        {"end_phrase": "Outro line"},
    ],
    "change_case:capital_word_frequency": [
        {"capital_frequency": 3, "capital_relation": "at least"},
        {"capital_frequency": 2, "capital_relation": "less than"},
    ],
    "change_case:english_capital": [{}],
    "change_case:english_lowercase": [{}],
    "punctuation:no_comma": [{}],
    "startend:quotation": [{}],
}
INSTRUCTIONS: list[dict[str, Any]] = [
    {"id": id_, "kwargs": kwargs} if kwargs else {"id": id_}
    for id_, sets in KWARGS.items()
    for kwargs in sets
]


@pytest.fixture(scope="module")
def peer() -> Iterator[types.SimpleNamespace]:
    detect_language("seed langdetect first")  # referee seeds it; lm-eval shares the module
    loaded = load()
    with same_punkt(loaded):
        yield loaded


def test_the_table_covers_every_instruction_id() -> None:
    assert {i["id"] for i in INSTRUCTIONS} == set(INSTRUCTION_IDS)


@pytest.mark.slow  # about 3 s: lm-eval's checkers on every generated response
@pytest.mark.parametrize("mode", ["strict", "loose"])
def test_verdicts_agree_with_lm_eval(peer: types.SimpleNamespace, mode: str) -> None:
    disagreements = []
    followed: dict[str, set[bool]] = {}
    for instruction in INSTRUCTIONS:
        for response in RESPONSES:
            theirs = verdicts(peer, response, [instruction], mode=mode)[0]
            ours = check_instructions(response, [instruction], mode=mode)  # type: ignore[arg-type]
            mine = ours.verdicts[0]["followed"]
            followed.setdefault(instruction["id"], set()).add(mine)
            if mine != theirs:
                disagreements.append((instruction, response, mine, theirs))
    assert disagreements == []
    # the set is not vacuous: every id is both followed and violated by some response
    assert {k: v for k, v in followed.items() if v != {True, False}} == {}


@pytest.mark.slow  # about 1 s: lm-eval's checkers
def test_several_instructions_score_the_fraction_lm_eval_follows(
    peer: types.SimpleNamespace,
) -> None:
    chosen = [INSTRUCTIONS[k] for k in (0, 8, 16, 33, 43, 44)]
    for response in RESPONSES:
        for mode in ("strict", "loose"):
            theirs = verdicts(peer, response, chosen, mode=mode)
            ours = check_instructions(response, chosen, mode=mode)  # type: ignore[arg-type]
            assert [v["followed"] for v in ours.verdicts] == theirs
            assert ours.score == pytest.approx(sum(theirs) / len(theirs))
            every = check_instructions(response, chosen, mode=mode, aggregate="all")  # type: ignore[arg-type]
            assert every.score == (1.0 if all(theirs) else 0.0)
