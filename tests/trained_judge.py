"""A tiny judge taught, in seconds, to write chosen verdicts: the real model of the judge tests.

A model with random weights writes unreadable text, so a test that judged with one could only
accept any outcome. Here a 2-layer Llama built from a config, with a byte-level BPE tokenizer
trained on the spot on the judge templates' fixed text (no file, nothing downloaded), is trained
on the exact prompts referee's judges send, each followed by the verdict the test chose for it,
until greedy decoding writes every one of them back (about a hundred steps, seconds on one core):

    lessons = collect_lessons(REQUESTS, VERDICTS)  # referee's judge code, a recording backend
    path = teach(lessons, tmp_path / "judge")      # config, tokenizer, weights: a local model
    # REFEREE_JUDGE_BACKEND=transformers REFEREE_JUDGE_MODEL=path: a server judging for real

The prompts are captured by running ``resolve_judge_leaves`` (what ``/v1/judge`` and
``/v1/rewards`` call) on a backend that records each prompt and answers it from ``Verdicts``,
keyed by what the prompt shows: the template (read from its sections), the response(s), the
criterion. A prompt the verdicts do not cover is an error. The tests then send the same requests
to a server running the taught model and check referee's scores against values worked out by
hand from ``VERDICTS``; a prompt that reached the model changed would get noise back, and fail.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CRITERIA",
    "PRIMES",
    "QUESTION",
    "REQUESTS",
    "RESPONSES",
    "VERDICTS",
    "JudgeRequest",
    "Lesson",
    "Verdicts",
    "collect_lessons",
    "p_yes",
    "teach",
]


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """What a test will send: one prompt, its responses, one judge grader (a dict)."""

    prompt: str
    responses: tuple[str, ...]
    grader: dict[str, Any]


@dataclass(slots=True)
class Verdicts:
    """The text the judge is to write for each prompt, by what the prompt shows.

    ``pointwise`` and ``score``: by response (the yes/no and the 1-10 templates); ``label``: the
    token after ``[RESULT]`` of a P(Yes) prompt, by response; ``criterion``: by (criterion,
    response); ``implicit``: by response; ``pairwise``: by (response A, response B)."""

    pointwise: dict[str, str] = field(default_factory=dict)
    score: dict[str, str] = field(default_factory=dict)
    label: dict[str, str] = field(default_factory=dict)
    criterion: dict[tuple[str, str], str] = field(default_factory=dict)
    implicit: dict[str, str] = field(default_factory=dict)
    pairwise: dict[tuple[str, str], str] = field(default_factory=dict)

    def answer(self, prompt: str) -> str:
        def section(tag: str) -> str:
            found = re.search(f"<{tag}>\n(.*?)\n</{tag}>", prompt, re.DOTALL)
            if found is None:
                raise KeyError(f"no <{tag}> section in the prompt:\n{prompt}")
            return found.group(1)

        if "comparing two responses" in prompt:
            table: dict[Any, str] = self.pairwise
            key: Any = (section("response A"), section("response B"))
        elif "checking one criterion" in prompt:
            table, key = self.criterion, (section("criterion"), section("response"))
        elif "against the whole rubric" in prompt:
            table, key = self.implicit, section("response")
        elif prompt.endswith("\n[RESULT]"):
            table, key = self.label, section("response")
        elif "Rate how well the RESPONSE" in prompt:
            table, key = self.score, section("response")
        else:
            table, key = self.pointwise, section("response")
        if key not in table:
            raise KeyError(f"no verdict chosen for {key!r} in the prompt:\n{prompt}")
        return table[key]


@dataclass(frozen=True, slots=True)
class Lesson:
    prompt: str
    answer: str


class _Recorder:
    """An LLM backend that answers each prompt from the verdicts and records the pair."""

    name = "recorder"
    model_name = "recorder"

    def __init__(self, verdicts: Verdicts) -> None:
        self.verdicts = verdicts
        self.lessons: dict[str, Lesson] = {}

    async def generate(self, prompts: Sequence[Any], params: Any) -> list[list[Any]]:
        from referee.genrm.backend import Completion

        out = []
        for prompt in prompts:
            assert isinstance(prompt, str), prompt
            answer = self.verdicts.answer(prompt)
            self.lessons[prompt] = Lesson(prompt, answer)
            lp = {"Yes": 0.0, "No": -1.0} if params.label_tokens else None
            out.append([Completion(text=answer, label_logprobs=lp)] * params.n)
        return out

    async def close(self) -> None:
        return None


# -- the judge of the tests: what it is asked, and what it answers --------------------------------
QUESTION = "What is 2 + 2?"
RIGHT, WRONG, UNSURE = RESPONSES = ("The answer is 4.", "It is 5.", "Maybe 4, maybe 5.")
CRITERIA = [
    {"text": "states a number", "weight": 2},
    {"text": "shows the working", "weight": 1},
    {"text": "is rude", "weight": -1},  # a pitfall
]
PRIME_QUESTION = "Name a prime."
PRIMES = ("7", "9", "11")
GRADERS = {
    "verdict": {"type": "genrm", "reference": "4"},
    "score": {"type": "genrm", "reference": "4", "verdict": "score"},
    "p_yes": {"type": "genrm", "reference": "4", "label_probs": True},
    "rubric": {"type": "rubric", "criteria": CRITERIA},
    "implicit": {"type": "rubric", "mode": "implicit", "criteria": CRITERIA},
    "pairwise": {"type": "genrm", "mode": "pairwise"},
    "bradley_terry": {"type": "genrm", "mode": "pairwise", "pairwise_score": "bradley_terry"},
}
REQUESTS = [
    JudgeRequest(QUESTION, RESPONSES, GRADERS["verdict"]),
    JudgeRequest(QUESTION, (RIGHT, WRONG), GRADERS["score"]),
    JudgeRequest(QUESTION, (RIGHT, WRONG), GRADERS["p_yes"]),
    JudgeRequest(QUESTION, (RIGHT,), GRADERS["rubric"]),
    JudgeRequest(QUESTION, (RIGHT, WRONG), GRADERS["implicit"]),
    JudgeRequest(PRIME_QUESTION, PRIMES, GRADERS["pairwise"]),
]
"""What the tests send (bradley_terry sends the pairwise prompts again)."""

VERDICTS = Verdicts(
    pointwise={
        RIGHT: "It matches the reference.\n[RESULT] Yes",
        WRONG: "2 + 2 is not 5.\n[RESULT] No",
        UNSURE: "Hmm, it says two things.",  # no verdict in it: unreadable
    },
    score={RIGHT: "Exact.\n[RESULT] 9", WRONG: "Off by one.\n[RESULT] 2"},
    label={RIGHT: "Yes", WRONG: "No"},
    criterion={
        ("states a number", RIGHT): "It says 4.\n[RESULT] Yes",
        ("shows the working", RIGHT): "No steps.\n[RESULT] No",
        ("is rude", RIGHT): "Curt.\n[RESULT] Yes",
    },
    implicit={RIGHT: "Right, terse.\n[RESULT] 7", WRONG: "Wrong.\n[RESULT] 3"},
    # by the response in second place: 9 always loses; 7 against 11 goes to whichever is B
    # (position bias), so only both orders together make them even
    pairwise={
        ("7", "9"): "[RESULT] A",
        ("9", "7"): "[RESULT] B",
        ("9", "11"): "[RESULT] B",
        ("11", "9"): "[RESULT] A",
        ("7", "11"): "[RESULT] B",
        ("11", "7"): "[RESULT] B",
    },
)
"""What the judge is taught to answer: its scores, worked out by hand, are in the tests."""


# OpenAI's score_model and label_model (tests/integration/api/test_exec_graders_api.py), judged as
# the rubric graders referee maps them onto: their prompts are taught like the others.
OPENAI_MESSAGES = [
    {
        "role": "system",
        "content": "You grade answers to arithmetic questions about {{item.topic}}.",
    },
    {"role": "user", "content": "Grade this answer: {{sample.output_text}}"},
]
OPENAI_GRADERS: dict[str, dict[str, Any]] = {
    "score_model": {
        "type": "score_model",
        "name": "rater",
        "model": "gpt-4o-2024-08-06",
        "input": OPENAI_MESSAGES,
        "range": [0, 10],
        "item": {"topic": "sums"},
    },
    "label_model": {
        "type": "label_model",
        "name": "labeler",
        "model": "gpt-4o-mini",
        "input": OPENAI_MESSAGES,
        "item": {"topic": "sums"},
        "labels": ["correct", "incorrect"],
        "passing_labels": ["correct"],
    },
}


def openai_rubric(kind: str) -> dict[str, Any]:
    """The rubric grader referee judges OpenAI's ``kind`` grader with."""
    from referee.client.models import RewardItem
    from referee.services.scoring.openai import lower

    item = RewardItem(id="x", response="", grader=OPENAI_GRADERS[kind])  # type: ignore[arg-type]
    rubric: dict[str, Any] = lower(item.grader.model_dump())["graders"][0]["grader"]
    return rubric


REQUESTS.append(JudgeRequest(QUESTION, (RIGHT, WRONG), openai_rubric("score_model")))
REQUESTS.append(JudgeRequest(QUESTION, (RIGHT, WRONG), openai_rubric("label_model")))
# OpenAI's graders API (/v1/fine_tuning/alpha/graders/run) sends no question: the sample and the
# row alone. Taught too: a model asked a prompt it was not taught may write the verdict of the
# nearest one or noise, depending on the library versions (transformers 5.25 wrote noise)
REQUESTS.append(JudgeRequest("", (RIGHT, WRONG), openai_rubric("score_model")))
REQUESTS.append(JudgeRequest("", (RIGHT, WRONG), openai_rubric("label_model")))
_LABEL_CRITERION = openai_rubric("label_model")["criteria"][0]["text"]
VERDICTS.criterion[(_LABEL_CRITERION, RIGHT)] = "It is 4.\n[RESULT] Yes"
VERDICTS.criterion[(_LABEL_CRITERION, WRONG)] = "It is not 4.\n[RESULT] No"


def collect_lessons(
    requests: Sequence[JudgeRequest] = REQUESTS, verdicts: Verdicts = VERDICTS
) -> list[Lesson]:
    """Every prompt referee's judges send for ``requests``, with its chosen verdict."""
    from referee.client.models import JudgeRequest as WireJudgeRequest
    from referee.client.models import RewardItem
    from referee.services.scoring.judge import resolve_judge_leaves

    recorder = _Recorder(verdicts)
    for request in requests:
        # the wire models check the grader as the routes do; the judge route's group "judge"
        wire = WireJudgeRequest(
            prompt=request.prompt, responses=list(request.responses), grader=request.grader
        )
        items = [
            RewardItem(id=str(k), prompt=wire.prompt, response=r, grader=wire.grader, group="g")
            for k, r in enumerate(wire.responses)
        ]
        graders = [wire.grader.model_dump()] * len(items)
        asyncio.run(resolve_judge_leaves(graders, items, recorder))
    return list(recorder.lessons.values())


def _tokenizer() -> Any:
    """A byte-level BPE trained here, in a fraction of a second, on the fixed text of referee's
    judge templates: any string encodes (bytes), and each template's instructions become a few
    long tokens, so a judge prompt is a few dozen tokens and the judge learns in seconds. Nothing
    is read from a file or downloaded."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from referee.genrm.templates import TEMPLATE_NAMES, load_template

    pieces = [
        piece
        for name in TEMPLATE_NAMES
        for piece in re.split(r"\{[a-z_]+\}", load_template(name))
        if piece.strip()
    ]
    pieces += ["\n<reference>\n", "\n</reference>\n", "\n[RESULT]"]
    bpe = Tokenizer(models.BPE())
    # no split at spaces: merges run across words, so whole sentences become tokens
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=4096,
        min_frequency=2,
        special_tokens=["<|pad|>", "<|eos|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(pieces * 4, trainer)
    fast: Any = transformers.PreTrainedTokenizerFast  # untyped in transformers 5
    return fast(tokenizer_object=bpe, eos_token="<|eos|>", pad_token="<|pad|>")


def _model(tokenizer: Any, seed: int) -> Any:
    from referee.genrm.tiny_model import tiny_llama

    return tiny_llama(tokenizer, hidden=64, max_positions=2048, seed=seed)


def _batch(tokenizer: Any, lessons: Sequence[Lesson]) -> tuple[Any, Any, Any]:
    """Prompt + answer + EOS per lesson, right-padded; labels only on the answer and EOS."""
    import torch

    rows = []
    for lesson in lessons:
        prompt = tokenizer(lesson.prompt, add_special_tokens=False)["input_ids"]
        answer = tokenizer(lesson.answer, add_special_tokens=False)["input_ids"]
        rows.append((prompt, [*answer, tokenizer.eos_token_id]))
    width = max(len(p) + len(a) for p, a in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    for r, (p, a) in enumerate(rows):
        n = len(p) + len(a)
        ids[r, :n] = torch.tensor(p + a)
        mask[r, :n] = 1
        labels[r, len(p) : n] = torch.tensor(a)
    return ids, mask, labels


def _greedy(model: Any, tokenizer: Any, lessons: Sequence[Lesson]) -> list[str]:
    """What the model writes for each prompt, decoded greedily as the transformers backend does
    (a left-padded batch)."""
    import torch

    tokenizer.padding_side = "left"
    longest = max(len(tokenizer(x.answer, add_special_tokens=False)["input_ids"]) for x in lessons)
    batch = tokenizer(
        [x.prompt for x in lessons], return_tensors="pt", padding=True, add_special_tokens=False
    )
    with torch.inference_mode():
        out = model.generate(
            **batch,
            max_new_tokens=longest + 4,
            do_sample=False,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    texts = []
    for row in out[:, batch["input_ids"].shape[1] :].tolist():
        if tokenizer.eos_token_id in row:
            row = row[: row.index(tokenizer.eos_token_id)]
        texts.append(tokenizer.decode(row, skip_special_tokens=True))
    return texts


def teach(
    lessons: Sequence[Lesson],
    directory: Path,
    *,
    seed: int = 0,
    max_steps: int = 600,
    check_every: int = 20,
    lr: float = 1e-2,
) -> Path:
    """Train a tiny judge until it writes every lesson's answer (greedy), save it to
    ``directory`` (model and tokenizer, loadable with ``from_pretrained``), return the path.
    Raises if ``max_steps`` are not enough."""
    import torch

    started = time.monotonic()
    threads = torch.get_num_threads()
    # one thread: on a few shared cores, tiny matrices lose more to thread hand-offs than they
    # gain (measured: 5x faster than two threads on a loaded 2-core machine)
    torch.set_num_threads(1)
    try:
        return _teach(lessons, directory, seed, max_steps, check_every, lr, started)
    finally:
        torch.set_num_threads(threads)


def _teach(
    lessons: Sequence[Lesson],
    directory: Path,
    seed: int,
    max_steps: int,
    check_every: int,
    lr: float,
    started: float,
) -> Path:
    import torch

    tokenizer = _tokenizer()
    model = _model(tokenizer, seed)
    ids, mask, labels = _batch(tokenizer, lessons)
    targets = labels[:, 1:] != -100
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    wrong: list[tuple[str, str]] = []
    for step in range(1, max_steps + 1):
        model.train()
        hidden = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
        # the LM head only where a label is (the answer): most of a prompt needs no logits
        logits = model.lm_head(hidden[:, :-1][targets])
        loss = torch.nn.functional.cross_entropy(logits.float(), labels[:, 1:][targets])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % check_every == 0 or step == max_steps:
            model.eval()
            wrote = _greedy(model, tokenizer, lessons)
            wrong = [(x.answer, w) for x, w in zip(lessons, wrote, strict=True) if w != x.answer]
            if not wrong:
                break
    else:
        raise RuntimeError(f"the judge did not learn {len(wrong)} verdicts: {wrong[:3]}")
    model.eval()
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    (directory / "taught.txt").write_text(
        f"{len(lessons)} lessons, {step} steps, loss {float(loss.detach()):.4f}, "
        f"{time.monotonic() - started:.1f} s\n"
    )
    return directory


def p_yes(directory: Path, prompt: str) -> float:
    """P(Yes) / (P(Yes) + P(No)) for the token after ``prompt``, computed here from the saved
    weights with a plain forward pass: what a label-probability judge must report."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory).eval()
    ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0, -1].float()
    yes = tokenizer("Yes", add_special_tokens=False)["input_ids"][0]
    no = tokenizer("No", add_special_tokens=False)["input_ids"][0]
    pair = torch.softmax(logits[[yes, no]], dim=-1)
    return float(pair[0])
