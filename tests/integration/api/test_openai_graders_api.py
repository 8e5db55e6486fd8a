"""OpenAI's graders API on a real server, called with OpenAI's own client (the ``openai``
package, pinned in the dev extras): ``client.fine_tuning.alpha.graders.run`` and ``.validate``
with ``OpenAI(base_url=server.url + "/v1")``, the answers read into the SDK's own
``GraderRunResponse`` / ``GraderValidateResponse``. The graders are OpenAI's objects as its
guide writes them, ``{{item.*}}`` templates and all, built from the SDK's own param types."""

from __future__ import annotations

from typing import Any, get_args
from typing import Any as Server

import httpx
import openai
import pytest
from openai.types.graders import (
    MultiGraderParam,
    PythonGraderParam,
    StringCheckGraderParam,
    TextSimilarityGrader,
    TextSimilarityGraderParam,
)

SAMPLE = "{{sample.output_text}}"
EXACT: StringCheckGraderParam = {
    "type": "string_check",
    "name": "exact",
    "input": SAMPLE,
    "reference": "{{item.answer}}",
    "operation": "eq",
}
CLOSE: TextSimilarityGraderParam = {
    "type": "text_similarity",
    "name": "close",
    "input": SAMPLE,
    "reference": "{{item.answer}}",
    "evaluation_metric": "fuzzy_match",
}
CODE: PythonGraderParam = {
    "type": "python",
    "name": "code",
    "source": "def grade(sample, item):\n"
    "    return 1.0 if sample['output_text'].strip() == item['answer'] else 0.0\n",
}
BOTH: MultiGraderParam = {
    "type": "multi",
    "name": "both",
    "graders": {"exact": EXACT, "close": CLOSE},  # type: ignore[typeddict-item]
    "calculate_output": "0.5 * exact + 0.5 * close",
}


@pytest.fixture
def client(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def test_run_fills_the_items_templates_and_answers_as_openai_does(client: openai.OpenAI) -> None:
    graders = client.fine_tuning.alpha.graders
    right = graders.run(grader=EXACT, model_sample="Paris", item={"answer": "Paris"})
    wrong = graders.run(grader=EXACT, model_sample="Lyon", item={"answer": "Paris"})
    assert (right.reward, wrong.reward) == (1.0, 0.0)
    assert right.metadata.type == "string_check" and right.metadata.name == "exact"
    errors = right.metadata.errors
    assert not any(v for k, v in errors.model_dump().items() if isinstance(v, bool)), errors
    close = graders.run(grader=CLOSE, model_sample="Paris!", item={"answer": "Paris"})
    assert close.reward == pytest.approx(10 / 11)  # rapidfuzz's ratio, as OpenAI's metric
    # every metric OpenAI's SDK names is one referee runs
    metrics = get_args(TextSimilarityGrader.model_fields["evaluation_metric"].annotation)
    assert len(metrics) >= 11
    for metric in metrics:
        same, other = (
            graders.run(
                grader={**CLOSE, "evaluation_metric": metric},
                model_sample=sample,
                item={"answer": "the cat sat on the mat"},
            ).reward
            for sample in ("the cat sat on the mat", "dogs bark at night")
        )
        assert same > 0.99 and other < same, (metric, same, other)


def test_multi_gives_its_parts_as_sub_rewards(client: openai.OpenAI) -> None:
    out = client.fine_tuning.alpha.graders.run(
        grader=BOTH, model_sample="Paris!", item={"answer": "Paris"}
    )
    assert out.reward == pytest.approx(0.5 * 0 + 0.5 * 10 / 11)
    assert out.sub_rewards == {"exact": 0.0, "close": pytest.approx(10 / 11)}
    # the SDK types `graders` as one grader object: named by its name
    one = {**BOTH, "graders": EXACT, "calculate_output": "exact"}
    got = client.fine_tuning.alpha.graders.run(
        grader=one,  # type: ignore[arg-type]
        model_sample="Paris",
        item={"answer": "Paris"},
    )
    assert got.reward == 1.0 and got.sub_rewards == {"exact": 1.0}


def test_python_grader_reads_the_item_and_reports_its_errors(client: openai.OpenAI) -> None:
    graders = client.fine_tuning.alpha.graders
    assert graders.run(grader=CODE, model_sample="42", item={"answer": "42"}).reward == 1.0
    assert graders.run(grader=CODE, model_sample="41", item={"answer": "42"}).reward == 0.0
    broken = graders.run(grader=CODE, model_sample="42", item={"no_answer": 1})
    assert broken.reward == 0.0
    assert broken.metadata.errors.python_grader_runtime_error
    assert "KeyError" in (broken.metadata.errors.python_grader_runtime_error_details or "")
    endless = {
        **CODE,
        "source": "def grade(sample, item):\n    while True:\n        pass\n",
        "timeout_s": 1,
    }
    stuck = graders.run(grader=endless, model_sample="42", item={"answer": "42"})  # type: ignore[arg-type]
    assert stuck.reward == 0.0 and stuck.metadata.errors.python_grader_server_error
    assert not stuck.metadata.errors.python_grader_runtime_error


def test_a_formula_that_cannot_be_computed(client: openai.OpenAI) -> None:
    grader = {**BOTH, "calculate_output": "close / exact"}
    out = client.fine_tuning.alpha.graders.run(
        grader=grader,  # type: ignore[arg-type]
        model_sample="Lyon",
        item={"answer": "Paris"},
    )
    assert out.reward == 0.0 and out.metadata.errors.formula_parse_error
    assert out.sub_rewards["exact"] == 0.0


def test_validate_and_what_is_refused(client: openai.OpenAI) -> None:
    graders = client.fine_tuning.alpha.graders
    for grader in (EXACT, CLOSE, CODE, BOTH):
        assert graders.validate(grader=grader).grader is not None  # the SDK's own union
    with pytest.raises(openai.UnprocessableEntityError, match="operation"):
        graders.validate(grader={**EXACT, "operation": "startswith"})  # type: ignore[typeddict-item]
    with pytest.raises(openai.UnprocessableEntityError, match=r"item has no value"):
        graders.run(grader=EXACT, model_sample="Paris", item={"other": 1})
    with pytest.raises(openai.UnprocessableEntityError, match="JSON object"):
        graders.run(grader=EXACT, model_sample="Paris", item=[1, 2])
    with pytest.raises(openai.UnprocessableEntityError, match=r"calculate_output|formula"):
        graders.validate(grader={**BOTH, "calculate_output": "exact + nowhere"})


def test_run_equals_the_rewards_route(server: Server, client: openai.OpenAI) -> None:
    """One grading path: the run's reward is the one /v1/rewards gives the same item."""
    rows = [("Paris", {"answer": "Paris"}), ("Paris, France", {"answer": "Paris"})]
    for sample, item in rows:
        run = client.fine_tuning.alpha.graders.run(grader=BOTH, model_sample=sample, item=item)
        grader: dict[str, Any] = {
            **BOTH,
            "graders": {
                name: {**g, "reference": item["answer"]} for name, g in BOTH["graders"].items()
            },
        }
        body = {"items": [{"id": "0", "response": sample, "grader": grader}]}
        direct = httpx.post(server.url + "/v1/rewards", json=body, timeout=60).json()
        assert run.reward == pytest.approx(direct["rewards"][0]["score"])


def test_the_api_key_is_the_bearer_token(referee_server_factory: Any, tmp_path: Any) -> None:
    locked = referee_server_factory(tmp_path, {"REFEREE_API_KEYS": "s3cret"}, "locked")
    good = openai.OpenAI(base_url=locked.url + "/v1", api_key="s3cret", max_retries=0)
    assert good.fine_tuning.alpha.graders.validate(grader=EXACT).grader is not None
    bad = openai.OpenAI(base_url=locked.url + "/v1", api_key="nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.fine_tuning.alpha.graders.validate(grader=EXACT)


def test_model_graders_on_the_servers_judge(judge_server: Server) -> None:
    """score_model and label_model run on the server's judge (the taught model of
    tests/trained_judge.py), the row given as OpenAI gives it (``item``), through OpenAI's
    client: the rewards /v1/rewards gives these graders (tests/integration/api/
    test_exec_graders_api.py), rating 7 of 10 scaled to [0, 10], the label met or not."""
    from trained_judge import OPENAI_GRADERS, RIGHT, WRONG

    client = openai.OpenAI(base_url=judge_server.url + "/v1", api_key="unused", max_retries=0)
    got = {}
    for kind, grader in OPENAI_GRADERS.items():
        row = grader["item"]
        given = {k: v for k, v in grader.items() if k != "item"}
        for k, sample in enumerate((RIGHT, WRONG)):
            out = client.fine_tuning.alpha.graders.run(
                grader=given,  # type: ignore[arg-type]
                model_sample=sample,
                item=row,
            )
            assert not out.metadata.errors.model_grader_server_error, out
            got[f"{kind}-{k}"] = out.reward
    assert got["score_model-0"] == pytest.approx(10 * 6 / 9)
    assert got["score_model-1"] == pytest.approx(10 * 2 / 9)
    assert (got["label_model-0"], got["label_model-1"]) == (1.0, 0.0)
