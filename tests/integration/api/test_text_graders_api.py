"""``instruction_following`` and ``text_similarity`` through ``/v1/rewards`` on a real server:
verdicts equal lm-eval's IFEval checkers (its pinned wheel's code, loaded by path), scores equal
the metric libraries' own (cosine: numpy on the pinned GloVe wheel's files), OpenAI grader objects
work as they are, bad specs are 422 problems."""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from typing import Any
from typing import Any as Server

import glove_peer
import httpx
import pytest
from grader_cases import weighted
from ifeval_peer import load, same_punkt, verdicts
from rouge_score import rouge_scorer
from sacrebleu import sentence_bleu

IFEVAL_ROW = {  # google/IFEval's shape: every kwarg name, None where unused
    "instruction_id_list": [
        "punctuation:no_comma",
        "length_constraints:number_words",
        "detectable_format:title",
        "change_case:english_lowercase",
        "keywords:existence",
    ],
    "kwargs": [
        {"num_words": None, "relation": None, "keywords": None},
        {"num_words": 12, "relation": "less than", "keywords": None},
        {"num_words": None, "relation": None, "keywords": None},
        {"num_words": None, "relation": None, "keywords": None},
        {"num_words": None, "relation": None, "keywords": ["river"]},
    ],
}
RESPONSES = [
    "<<a river song>>\nthe river runs slow and deep under the old bridge",
    "<<A River Song>>\nThe river, slow and deep, runs under the old bridge and far away.",
    "Sure!\n<<a river song>>\n*the river runs slow*",
    "",
    "no title, no keyword",
]


def post(server: Server, body: object) -> httpx.Response:
    return httpx.post(server.url + "/v1/rewards", json=body, timeout=120)


@pytest.fixture(scope="module")
def peer() -> Iterator[types.SimpleNamespace]:
    from referee.verifiers.instructions.text_tools import detect_language

    detect_language("seed langdetect first")
    loaded = load()
    with same_punkt(loaded):
        yield loaded


@pytest.mark.parametrize("mode", ["strict", "loose"])
def test_instruction_verdicts_equal_lm_evals(
    server: Server, peer: types.SimpleNamespace, mode: str
) -> None:
    grader = {"type": "instruction_following", "mode": mode, **IFEVAL_ROW}
    items = [{"id": f"r{k}", "response": r, "grader": grader} for k, r in enumerate(RESPONSES)]
    r = post(server, {"items": items})
    assert r.status_code == 200, r.text
    instructions = [
        {"id": i, "kwargs": {k: v for k, v in kw.items() if v is not None}}
        for i, kw in zip(IFEVAL_ROW["instruction_id_list"], IFEVAL_ROW["kwargs"], strict=True)
    ]
    seen = set()
    for reward, response in zip(r.json()["rewards"], RESPONSES, strict=True):
        theirs = verdicts(peer, response, instructions, mode=mode)
        got = [v["followed"] for v in reward["details"]["instructions"]]
        assert got == theirs, response
        assert reward["score"] == pytest.approx(sum(theirs) / len(theirs))
        assert reward["details"]["mode"] == mode
        seen.add(reward["score"])
    assert len(seen) >= 3  # the responses follow different shares of the instructions

    # a reasoning model's response: the verdicts are lm-eval's on the answer after </think>
    # (what veRL's and open-instruct's IFEval rewards give the checkers), not on the reasoning
    think = "<think>\nOkay, The User wants a Title, no commas, under 12 words.\n</think>\n\n"
    items = [{**item, "response": think + item["response"]} for item in items]
    r = post(server, {"items": items})
    assert r.status_code == 200, r.text
    for reward, response in zip(r.json()["rewards"], RESPONSES, strict=True):
        got = [v["followed"] for v in reward["details"]["instructions"]]
        assert got == verdicts(peer, response, instructions, mode=mode), response


def test_similarity_scores_equal_the_libraries(server: Server) -> None:
    reference = "The Eiffel Tower is in Paris, France."
    response = "The Eiffel Tower stands in Paris."
    metrics = ["bleu", "rouge_1", "rouge_l", "fuzzy_match", "meteor"]
    items = [
        {
            "id": m,
            "response": response,
            "grader": {"type": "text_similarity", "reference": reference, "evaluation_metric": m},
        }
        for m in metrics
    ]
    r = post(server, {"items": items})
    assert r.status_code == 200, r.text
    got = {x["id"]: x["score"] for x in r.json()["rewards"]}
    rouge = rouge_scorer.RougeScorer(["rouge1", "rougeL"])
    from nltk.translate.meteor_score import meteor_score
    from rapidfuzz import fuzz

    from referee.verifiers.text_similarity import wordnet

    expected = {
        "bleu": sentence_bleu(response, [reference]).score / 100,
        "rouge_1": rouge.score(reference, response)["rouge1"].fmeasure,
        "rouge_l": rouge.score(reference, response)["rougeL"].fmeasure,
        "fuzzy_match": fuzz.ratio(response, reference) / 100,
        "meteor": meteor_score([reference.split()], response.split(), wordnet=wordnet()),
    }
    assert got == expected


COSINE_PAIRS = [  # (response, reference), plain text
    ("The Eiffel Tower stands in Paris.", "The Eiffel Tower is in Paris, France."),
    ("a kitten was sitting on the rug", "the cat sat on the mat"),
    ("Bananas are rich in potassium.", "The capital of France is Paris."),
    ("The capital of France is Paris.", "The capital of France is Paris."),
    ("", "The capital of France is Paris."),
    ("zzzqx qqqzx", "the cat"),
]


def test_cosine_scores_equal_numpy_on_the_glove_vectors(server: Server) -> None:
    items = [
        {
            "id": str(k),
            "response": response,
            "grader": {"type": "text_similarity", "reference": ref, "evaluation_metric": "cosine"},
        }
        for k, (response, ref) in enumerate(COSINE_PAIRS)
    ]
    r = post(server, {"items": items})
    assert r.status_code == 200, r.text
    rewards = r.json()["rewards"]
    for reward, (response, ref) in zip(rewards, COSINE_PAIRS, strict=True):
        want = glove_peer.cosine(response, ref)
        assert reward["score"] == pytest.approx(want, rel=1e-12, abs=1e-12), (response, ref)
        assert reward["details"]["metric"] == "cosine"
        assert reward["details"]["similarity"] == reward["score"]
    scores = [x["score"] for x in rewards]
    assert scores[3] == 1.0 and scores[4] == scores[5] == 0.0
    assert scores[0] > scores[1] > 0.9 > scores[2] > 0.0


def openai_object(kind: str, name: str, reference: str, **fields: Any) -> dict[str, Any]:
    """An OpenAI grader object of type ``kind`` over the sample's output text, as OpenAI's
    graders API takes it."""
    base = {"type": kind, "name": name, "input": "{{sample.output_text}}", "reference": reference}
    return {**base, **fields}


def test_openai_cosine_object_as_it_is(server: Server) -> None:
    reference = "The capital of France is Paris."
    similar = openai_object(
        "text_similarity",
        "means the same",
        reference,
        evaluation_metric="cosine",
        pass_threshold=0.9,
    )
    responses = {"yes": "Paris is the capital of France.", "no": "Bananas are rich in potassium."}
    items = [{"id": k, "response": v, "grader": similar} for k, v in responses.items()]
    items.append(
        {"id": "binary", "response": responses["yes"], "grader": {**similar, "binary": True}}
    )
    r = post(server, {"items": items})
    assert r.status_code == 200, r.text
    got = {x["id"]: x for x in r.json()["rewards"]}
    for key, response in responses.items():
        want = glove_peer.cosine(response, similar["reference"])
        assert got[key]["score"] == pytest.approx(want, rel=1e-12)
        assert got[key]["details"]["passed"] is (key == "yes")
    assert got["binary"]["score"] == 1.0
    assert got["binary"]["details"]["similarity"] == got["yes"]["score"]


def test_openai_objects_and_weighted(server: Server) -> None:
    fuzzy = {"evaluation_metric": "fuzzy_match", "pass_threshold": 0.8, "binary": True}
    similar = openai_object("text_similarity", "close to the answer", "four", **fuzzy)
    check = openai_object("string_check", "exact", "four", operation="eq")
    both = weighted((1, check), (1, {"type": "instruction_following", **IFEVAL_ROW}))
    items = [
        {"id": "sim", "response": "four", "grader": similar},
        {"id": "sim-no", "response": "fourteen", "grader": similar},
        {"id": "check", "response": "four", "grader": check},
        {"id": "both", "response": "four", "grader": both},
    ]
    body = post(server, {"items": items}).json()
    scores = {x["id"]: x["score"] for x in body["rewards"]}
    assert scores["sim"] == 1.0 and scores["sim-no"] == 0.0 and scores["check"] == 1.0
    # "four": no comma, < 12 words, lowercase English (langdetect) ... no title, no "river"
    parts = body["rewards"][3]["details"]["parts"]
    assert parts[1]["type"] == "instruction_following"
    assert scores["both"] == pytest.approx((1.0 + parts[1]["score"]) / 2)


@pytest.mark.parametrize(
    ("grader", "where", "message"),
    [
        (
            {"type": "text_similarity", "reference": "x", "evaluation_metric": "embedding"},
            "grader.text_similarity.evaluation_metric",
            "'cosine'",
        ),
        (
            {"type": "text_similarity", "reference": "{{item.answer}}"},
            "grader.text_similarity.reference",
            "item template",
        ),
        (
            {"type": "instruction_following", "instructions": [{"id": "keywords:existence"}]},
            "grader.instruction_following.instructions.0",
            "needs the kwarg 'keywords'",
        ),
    ],
)
def test_bad_specs_are_422_problems(
    server: Server, grader: dict[str, Any], where: str, message: str
) -> None:
    r = post(server, {"items": [{"id": "a", "response": "r", "grader": grader}]})
    assert r.status_code == 422
    problem = r.json()
    assert problem["type"] == "invalid-request"
    assert where in problem["detail"] and message in problem["detail"], problem["detail"]


def test_a_hostile_response_costs_one_check_not_the_server(
    referee_server_factory: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # nltk's Punkt + Treebank tokenizers (IFEval's capital-word count, here and in lm-eval) take
    # about 25 µs a sentence: 1.3 million one-letter sentences are half a minute of work, far
    # past the item's 5 s deadline, which stops it
    srv = referee_server_factory(
        tmp_path_factory.mktemp("text-hostile"),
        {"REFEREE_MATH_WORKERS": "1", "REFEREE_PROCEDURAL_TIMEOUT_S": "5"},
        "text-hostile",
    )
    capitals = {
        "id": "change_case:capital_word_frequency",
        "kwargs": {"capital_frequency": 3, "capital_relation": "at least"},
    }
    grader = {"type": "instruction_following", "instructions": [capitals]}
    hostile = {"id": "bomb", "response": "A. " * 1_300_000, "grader": grader}
    r = post(srv, {"items": [hostile]})
    assert r.status_code == 200, r.text
    assert r.json()["rewards"][0]["details"]["outcome"] == "timeout"
    # the replaced worker answers the next item (a check that imports nothing heavy)
    commas = {"type": "instruction_following", "instructions": [{"id": "punctuation:no_comma"}]}
    fine = {"id": "ok", "response": "No commas here.", "grader": commas}
    r = post(srv, {"items": [fine]})
    assert r.json()["rewards"][0]["score"] == 1.0
    assert httpx.get(srv.url + "/healthz").json() == {"status": "ok"}


def test_slime_route_takes_the_instructions_from_the_label(server: Server) -> None:
    label = json.dumps(IFEVAL_ROW)
    r = httpx.post(
        server.url + "/slime/reward/instruction_following",
        json={"prompt": "p", "response": RESPONSES[0], "label": label},
        params={"details": "true"},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    inline = {"type": "instruction_following", **IFEVAL_ROW}
    same = post(server, {"items": [{"id": "a", "response": RESPONSES[0], "grader": inline}]})
    assert body["reward"] == same.json()["rewards"][0]["score"] == 0.8  # 13 words, not < 12
    assert body["details"]["instructions"] == same.json()["rewards"][0]["details"]["instructions"]
