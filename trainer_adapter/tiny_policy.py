"""A tiny policy for CPU demonstrations: a byte tokenizer, a 2-layer Llama, and arithmetic.

Nothing is downloaded: the tokenizer is transformers' ``ByT5Tokenizer`` (bytes, no vocabulary
file; it ends every encoding with ``</s>``, and TRL encodes prompts the same way), the model is
built from a config. :func:`sft` teaches it a few single-digit additions (8 by default) from
*noisy* soft labels (the right sum with probability ``p_correct``, the rest spread over the
wrong digits), so the policy answers right only about 30% of the time: a policy that GRPO with
a correctness reward visibly improves (mean reward ~0.4 to ~0.7 in 30 steps, under a minute on
the CPU; ``tests/integration/trainer/test_grpo_demo.py``).

    python -m referee.trainer_adapter.tiny_policy --out /tmp/tiny   # model, tokenizer, data
    OMP_NUM_THREADS=1 referee train grpo --model /tmp/tiny --dataset /tmp/tiny/addition.jsonl \\
        --grader '{"type": "math"}' --num-generations 8 --per-device-train-batch-size 64 \\
        --max-completion-length 2 --learning-rate 1e-3 --max-steps 30 --quiet

Requires the ``train`` extra (torch, transformers).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "addition_rows",
    "byte_tokenizer",
    "sample_accuracy",
    "sft",
    "tiny_policy",
    "tool_tokenizer",
    "write_tiny_policy",
]

PROMPTS = [(a, b) for a in range(10) for b in range(10) if a + b <= 9]


def byte_tokenizer() -> Any:
    """transformers' ``ByT5Tokenizer`` without sentinel tokens: 256 bytes + pad, eos, unk."""
    from transformers import ByT5Tokenizer

    return ByT5Tokenizer(extra_ids=0)


def tool_tokenizer() -> Any:
    """:func:`byte_tokenizer` with TRL's own Qwen2.5 chat template (Hermes ``<tool_call>``
    format): TRL picks its tool-call parser by the template, so tools and
    ``environment_factory`` need one it knows."""
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer = byte_tokenizer()
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


def tiny_policy(tokenizer: Any, seed: int = 0, hidden: int = 64) -> Any:
    """A 2-layer Llama (about 100k parameters) with random weights."""
    from referee.genrm.tiny_model import tiny_llama

    return tiny_llama(
        tokenizer, hidden=hidden, max_positions=64, seed=seed, tie_word_embeddings=True
    )


def addition_rows(n: int = 8, seed: int = 0) -> list[dict[str, str]]:
    """``n`` of the 55 single-digit additions with a single-digit sum (a fixed shuffle of them,
    by ``seed``) as ``{"prompt": "3+4=", "answer": "7"}`` rows."""
    pairs = list(PROMPTS)
    random.Random(seed).shuffle(pairs)
    return [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a, b in pairs[:n]]


def sft(
    model: Any,
    tokenizer: Any,
    rows: Sequence[dict[str, str]],
    *,
    steps: int = 200,
    p_correct: float = 0.3,
    lr: float = 2e-3,
    seed: int = 0,
) -> float:
    """Teach the answer format (one digit, then ``</s>``) and a *noisy* answer: the digit is
    trained towards the distribution that puts ``p_correct`` on the right sum and spreads the
    rest evenly over the nine wrong digits (soft labels, so a few full-batch steps suffice).
    The policy then answers right about ``p_correct`` of the time. Returns the last loss."""
    import torch

    torch.manual_seed(seed)
    eos = tokenizer.eos_token_id
    digit_ids = [tokenizer(str(d))["input_ids"][0] for d in range(10)]
    inputs, where, targets = [], [], []
    for row in rows:
        prompt = tokenizer(row["prompt"])["input_ids"]  # ends with </s>, as TRL encodes it
        target = torch.full((10,), (1.0 - p_correct) / 9)
        target[int(row["answer"])] = p_correct
        for digit in digit_ids:  # every digit is followed by </s>
            inputs.append([*prompt, digit])
            where.append(len(prompt) - 1)
            targets.append(target)
    x = torch.tensor(inputs)
    rows_at = torch.arange(len(inputs))
    at = torch.tensor(where)
    soft = torch.stack(targets)
    digits = torch.tensor(digit_ids)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    loss = torch.tensor(0.0)
    for _ in range(steps):
        logits = model(input_ids=x).logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        digit_logp = logp[rows_at, at][:, digits]  # log-probs of the ten digits
        # the digit: cross-entropy against the soft target (the ten digits get all the mass)
        answer_loss = -(soft * digit_logp).sum(-1).mean()
        stop_loss = -logp[rows_at, at + 1, eos].mean()  # then </s>
        loss = answer_loss + stop_loss
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
    model.eval()
    return float(loss.detach())


def sample_accuracy(
    model: Any, tokenizer: Any, rows: Sequence[dict[str, str]], samples: int = 8, seed: int = 0
) -> float:
    """Share of sampled answers (temperature 1) that are the right sum."""
    import torch

    torch.manual_seed(seed)
    batch = [row for row in rows for _ in range(samples)]
    x = torch.tensor([tokenizer(row["prompt"])["input_ids"] for row in batch])
    with torch.no_grad():
        out = model.generate(
            x,
            attention_mask=torch.ones_like(x),
            do_sample=True,
            temperature=1.0,
            max_new_tokens=2,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    answers = tokenizer.batch_decode(out[:, x.shape[1] :], skip_special_tokens=True)
    right = [ans.strip() == row["answer"] for ans, row in zip(answers, batch, strict=True)]
    return float(sum(right) / len(right))


def write_tiny_policy(
    directory: str | Path,
    *,
    prompts: int = 8,
    seed: int = 0,
    sft_steps: int = 200,
    p_correct: float = 0.3,
) -> Path:
    """Build, fine-tune and save the tiny policy with its tokenizer, and its ``prompts``
    additions as ``addition.jsonl``, under ``directory``; returns it."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    rows = addition_rows(prompts, seed)
    tokenizer = byte_tokenizer()
    model = tiny_policy(tokenizer, seed)
    sft(model, tokenizer, rows, steps=sft_steps, p_correct=p_correct, seed=seed)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    with open(path / "addition.jsonl", "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory to write the policy to")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prompts", type=int, default=8, help="additions to learn (1-100)")
    parser.add_argument("--sft-steps", type=int, default=200)
    parser.add_argument("--p-correct", type=float, default=0.3, help="share of right labels")
    args = parser.parse_args(argv)
    path = write_tiny_policy(
        args.out,
        prompts=args.prompts,
        seed=args.seed,
        sft_steps=args.sft_steps,
        p_correct=args.p_correct,
    )
    print(f"wrote the tiny policy and addition.jsonl to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
