"""Text graders: items/s through /v1/rewards against the peers called in-process, in one run.

    python -m bench.verifiers [--items 2000] [--rounds 3] [--workers 1 2]
    python -m bench.verifiers --items 40 --rounds 1 --workers 1     # a tiny check that it runs

* **instruction_following**: seeded IFEval-style rows (1-3 instructions drawn from every IFEval
  id, model-shaped responses of 40-300 words). The peer: lm-eval 0.4.13's own IFEval checkers
  (``test_instruction_following_strict``/``_loose`` from its pinned wheel, loaded by path as the
  tests do, ``tests/ifeval_peer.py``), called in this process, one row after another.
* **text_similarity**, every metric: seeded sentence pairs. The peer: the metric's library called
  directly in this process (rapidfuzz, sacreBLEU, nltk's GLEU, nltk's METEOR on nltk's reader of
  the same WordNet 3.0 files, rouge-score for rouge_1 to rouge_5 and rouge_l); for cosine, which no
  library computes, the same numpy computation (GloVe 6B 50-d mean-pooled, referee's own
  ``text_similarity.cosine``) in this process, so that row is the server's overhead alone.

Both sides use the same Punkt parameters and the same langdetect seed. referee: one request per
round with every item (its JSON body encoded before the clock starts, as the peer's inputs are
ready before its clock), on a real uvicorn server with each ``--workers`` count of check workers
(each item in a worker process under a deadline). The fastest of ``--rounds`` rounds after one
warm-up round each, referee's and the peer's taken in turns (this machine's speed drifts within
a minute; the peer's fastest over every column); "same verdicts" compares every item's result
with the peer's. The peer runs
in one process, so "1 worker" is the like-for-like row. Writes bench/out/verifiers.md.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from bench.clients import publish
from referee.services.launcher import Server, start_referee
from referee.verifiers.text_similarity import METRICS as SIMILARITY_METRICS

ROOT = Path(__file__).resolve().parent.parent
Compare = Callable[[Any, Any], bool]

WORDS = (
    "the river runs slow and deep under an old stone bridge while children watch boats drift "
    "past the market where traders sell bread fish and bright cloth to every visitor who comes "
    "early in the morning before the heat of the day settles over the town"
).split()
INSTRUCTIONS: list[dict[str, Any]] = [
    {"id": "keywords:existence", "kwargs": {"keywords": ["river", "bridge"]}},
    {
        "id": "keywords:frequency",
        "kwargs": {"keyword": "the", "frequency": 4, "relation": "at least"},
    },
    {"id": "keywords:forbidden_words", "kwargs": {"forbidden_words": ["fish", "cloth"]}},
    {
        "id": "keywords:letter_frequency",
        "kwargs": {"letter": "e", "let_frequency": 20, "let_relation": "at least"},
    },
    {"id": "language:response_language", "kwargs": {"language": "en"}},
    {
        "id": "length_constraints:number_sentences",
        "kwargs": {"num_sentences": 5, "relation": "less than"},
    },
    {"id": "length_constraints:number_paragraphs", "kwargs": {"num_paragraphs": 3}},
    {"id": "length_constraints:number_words", "kwargs": {"num_words": 150, "relation": "at least"}},
    {
        "id": "length_constraints:nth_paragraph_first_word",
        "kwargs": {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "the"},
    },
    {"id": "detectable_content:number_placeholders", "kwargs": {"num_placeholders": 1}},
    {"id": "detectable_content:postscript", "kwargs": {"postscript_marker": "P.S."}},
    {"id": "detectable_format:number_bullet_lists", "kwargs": {"num_bullets": 3}},
    {"id": "detectable_format:constrained_response", "kwargs": {}},
    {"id": "detectable_format:number_highlighted_sections", "kwargs": {"num_highlights": 2}},
    {
        "id": "detectable_format:multiple_sections",
        "kwargs": {"section_spliter": "Section", "num_sections": 2},
    },
    {"id": "detectable_format:json_format", "kwargs": {}},
    {"id": "detectable_format:title", "kwargs": {}},
    {"id": "combination:two_responses", "kwargs": {}},
    {"id": "combination:repeat_prompt", "kwargs": {"prompt_to_repeat": "Describe the town."}},
    {"id": "startend:end_checker", "kwargs": {"end_phrase": "Any other questions?"}},
    {
        "id": "change_case:capital_word_frequency",
        "kwargs": {"capital_frequency": 3, "capital_relation": "less than"},
    },
    {"id": "change_case:english_capital", "kwargs": {}},
    {"id": "change_case:english_lowercase", "kwargs": {}},
    {"id": "punctuation:no_comma", "kwargs": {}},
    {"id": "startend:quotation", "kwargs": {}},
]
METRICS = SIMILARITY_METRICS  # every metric the grader offers, in its order


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + rng.choice([".", ".", "!", "?"])


def _response(rng: random.Random) -> str:
    paragraphs = []
    for _ in range(rng.randint(1, 4)):
        sentences = [_sentence(rng, rng.randint(6, 18)) for _ in range(rng.randint(1, 5))]
        paragraphs.append(" ".join(sentences))
    shape = rng.random()
    if shape < 0.15:
        paragraphs.insert(0, "<<The Town>>")
    elif shape < 0.25:
        paragraphs = ["* " + p for p in paragraphs]
    elif shape < 0.3:
        return "```json\n" + json.dumps({"answer": paragraphs[0]}) + "\n```"
    text = rng.choice(["\n\n", " *** ", "\n\n"]).join(paragraphs)
    if rng.random() < 0.2:
        text = text.lower()
    if rng.random() < 0.2:
        text += "\nP.S. Any other questions?"
    return text


def instruction_rows(n: int, seed: int = 0) -> list[tuple[str, list[dict[str, Any]]]]:
    rng = random.Random(seed)
    return [(_response(rng), rng.sample(INSTRUCTIONS, rng.randint(1, 3))) for _ in range(n)]


def similarity_pairs(n: int, seed: int = 1) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        reference = _sentence(rng, rng.randint(8, 30))
        words = reference.split()
        for _ in range(rng.randint(0, len(words) // 2)):  # a paraphrase-ish edit of it
            words[rng.randrange(len(words))] = rng.choice(WORDS)
        pairs.append((" ".join(words), reference))
    return pairs


# -- the peers, in this process --------------------------------------------------------------


def _load_peer() -> Any:
    spec = importlib.util.spec_from_file_location("ifeval_peer", ROOT / "tests" / "ifeval_peer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _library(metric: str) -> Callable[[str, str], float]:
    if metric == "cosine":
        from referee.verifiers.text_similarity import cosine

        return cosine
    if metric == "fuzzy_match":
        from rapidfuzz import fuzz

        return lambda r, g: float(fuzz.ratio(r, g)) / 100
    if metric == "bleu":
        from sacrebleu import sentence_bleu

        return lambda r, g: float(sentence_bleu(r, [g]).score) / 100
    if metric == "gleu":
        from nltk.translate.gleu_score import sentence_gleu

        return lambda r, g: float(sentence_gleu([g.split()], r.split()))
    if metric == "meteor":
        from nltk.translate.meteor_score import meteor_score

        from referee.verifiers.text_similarity import wordnet

        reader = wordnet()  # nltk's own reader of the same WordNet 3.0 files the server reads
        return lambda r, g: float(meteor_score([g.split()], r.split(), wordnet=reader))
    from rouge_score import rouge_scorer

    kind = "rougeL" if metric == "rouge_l" else "rouge" + metric[-1]
    scorer = rouge_scorer.RougeScorer([kind])
    return lambda r, g: float(scorer.score(g, r)[kind].fmeasure)


def _timed(fn: Callable[[], list[Any]]) -> tuple[float, list[Any]]:
    """One round: seconds and results."""
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


# -- referee through HTTP --------------------------------------------------------------------


def _start(workers: int, log: Path) -> Server:
    env = {"REFEREE_MATH_WORKERS": str(workers), "REFEREE_MAX_BATCH_ITEMS": "100000"}
    return start_referee(env, log=log, timeout_s=120)


def _ifeval_run(
    ifeval: Any, peer: Any, rows: list[tuple[str, list[dict[str, Any]]]], mode: str
) -> list[Any]:
    return [ifeval.verdicts(peer, r, ins, mode=mode) for r, ins in rows]


def _metric_run(fn: Callable[[str, str], float], pairs: list[tuple[str, str]]) -> list[Any]:
    return [fn(r, g) for r, g in pairs]


def _post(client: httpx.Client, url: str, body: bytes) -> list[Any]:
    r = client.post(url + "/v1/rewards", content=body, headers=_JSON)
    r.raise_for_status()
    return list(r.json()["rewards"])


_JSON = {"content-type": "application/json"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.verifiers", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--items", type=int, default=2000, help="items per grader (and per metric)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args(argv)

    from referee.verifiers.instructions.text_tools import detect_language

    detect_language("seed langdetect before lm-eval uses it")
    ifeval = _load_peer()
    peer = ifeval.load()
    rows = instruction_rows(args.items)
    pairs = similarity_pairs(args.items)

    # name -> (items for HTTP, the peer's run, compare(http reward, peer result))
    cases: dict[str, tuple[list[dict[str, Any]], Callable[[], list[Any]], Compare]] = {}
    with ifeval.same_punkt(peer) as punkt:
        for mode in ("strict", "loose"):
            items = [
                {
                    "id": str(k),
                    "response": r,
                    "grader": {"type": "instruction_following", "instructions": ins, "mode": mode},
                }
                for k, (r, ins) in enumerate(rows)
            ]
            cases[f"instruction_following ({mode})"] = (
                items,
                functools.partial(_ifeval_run, ifeval, peer, rows, mode),
                lambda got, want: [v["followed"] for v in got["details"]["instructions"]] == want,
            )
        for metric in METRICS:
            fn = _library(metric)
            items = [
                {
                    "id": str(k),
                    "response": r,
                    "grader": {
                        "type": "text_similarity",
                        "reference": g,
                        "evaluation_metric": metric,
                    },
                }
                for k, (r, g) in enumerate(pairs)
            ]
            cases[f"text_similarity {metric}"] = (
                items,
                functools.partial(_metric_run, fn, pairs),
                lambda got, want: got["score"] == min(1.0, max(0.0, want)),
            )

        # the peer's and referee's rounds in turns: this machine's speed drifts by as much as
        # 2x within a minute (a shared host), and rounds in turns see the same drift
        peer_secs: dict[str, float] = {}
        results: dict[tuple[str, int], tuple[float, float]] = {}
        with tempfile.TemporaryDirectory() as tmp, httpx.Client(timeout=600) as client:
            for workers in args.workers:
                server = _start(workers, Path(tmp) / f"server{workers}.log")
                url = server.url
                try:
                    for name, (items, run_peer, same) in cases.items():
                        # encoded before the clock, as the peer's inputs are ready before its
                        # clock (a trainer builds its requests on its own cores)
                        body = json.dumps({"items": items}).encode()
                        _post(client, url, body)  # warm-up rounds: imports, langdetect's
                        run_peer()  # profiles, the workers' first checks
                        best = peer_secs.get(name, float("inf"))
                        secs = float("inf")
                        got: list[Any] = []
                        theirs: list[Any] = []
                        for _ in range(args.rounds):
                            took, got = _timed(functools.partial(_post, client, url, body))
                            secs = min(secs, took)
                            took, theirs = _timed(run_peer)
                            best = min(best, took)
                        peer_secs[name] = best
                        same_count = sum(1 for g, w in zip(got, theirs, strict=True) if same(g, w))
                        results[(name, workers)] = (len(items) / secs, same_count / len(items))
                finally:
                    server.stop(timeout_s=30)

    lines = [
        "# Text graders: items/s through /v1/rewards against the peers in-process",
        "",
        f"{args.items} items per row; the fastest of {args.rounds} rounds after a warm-up round, "
        "referee's and the peer's taken in turns (the peer's fastest over every column), "
        f"on {os.cpu_count()} CPUs (the figures move with whatever else loads the machine). "
        f"Sentences counted with {punkt}. Peer: lm-eval 0.4.13's IFEval checkers; the metric "
        "libraries called directly (cosine: referee's own numpy computation); one process.",
        "",
        "| grader | peer in-process items/s | "
        + " | ".join(
            f"/v1/rewards, {w} worker(s) items/s | ratio | same verdicts" for w in args.workers
        )
        + " |",
        "|---|---:|" + "---:|---:|---:|" * len(args.workers),
    ]
    for name, (items, _, _) in cases.items():
        peer_rate = len(items) / peer_secs[name]
        cells = []
        for w in args.workers:
            rate, agree = results[(name, w)]
            cells.append(f"{rate:,.0f} | {rate / peer_rate:.2f}x | {agree:.1%}")
        lines.append(f"| {name} | {peer_rate:,.0f} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    publish(args.out, "verifiers.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
