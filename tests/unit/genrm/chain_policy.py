"""A policy that continues chains of arithmetic: the stand-in for a model whose success depends
on whether the prefix it continues is right.

No tiny model can be made to continue a reasoning chain faithfully on demand, and the PRM's
bookkeeping (which step is first wrong, how many rollouts each mode spends) needs exactly that.
The policy reads the operations from the problem ("Start with 3. Then: +4, *2, -5.") and the
last value the prefix reached ("Step 2: 7 * 2 = 14"), applies the remaining operations and
writes ``\\boxed{result}``. With ``noise`` > 0 a rollout goes wrong with that probability.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from referee.genrm.backend import Completion, Prompt, SamplingParams

_OPS = re.compile(r"([+\-*])\s*(\d+)")
_STEP = re.compile(r"Step (\d+):[^\n]*=\s*(-?\d+)")


def apply(value: int, op: str, arg: int) -> int:
    return value + arg if op == "+" else value - arg if op == "-" else value * arg


def make_problem(start: int, ops: Sequence[tuple[str, int]]) -> str:
    return f"Start with {start}. Then: {', '.join(f'{o}{a}' for o, a in ops)}."


def make_solution(start: int, ops: Sequence[tuple[str, int]], wrong_at: int | None = None) -> str:
    """A step per operation, the answer last; step ``wrong_at`` (1-based) is off by one."""
    lines, value = [], start
    for k, (op, arg) in enumerate(ops, 1):
        new = apply(value, op, arg) + (1 if k == wrong_at else 0)
        lines.append(f"Step {k}: {value} {op} {arg} = {new}")
        value = new
    lines.append(f"Step {len(ops) + 1}: The answer is \\boxed{{{value}}}.")
    return "\n".join(lines)


class ChainPolicy:
    name = "chain"
    model_name = "chain-policy"

    def __init__(self, noise: float = 0.0, seed: int = 0) -> None:
        self.noise = noise
        self.rng = random.Random(seed)
        self.prompts_seen = 0

    def _continue(self, prompt: str) -> str:
        start = int(re.search(r"Start with (-?\d+)", prompt).group(1))  # type: ignore[union-attr]
        ops_text = prompt.split("Then:", 1)[1].split(".", 1)[0]
        ops = [(o, int(a)) for o, a in _OPS.findall(ops_text)]
        done = _STEP.findall(prompt)
        value = int(done[-1][1]) if done else start
        for op, arg in ops[len(done) :]:
            value = apply(value, op, arg)
        if self.rng.random() < self.noise:
            value += 7
        return f"Continuing, the answer is \\boxed{{{value}}}."

    async def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams
    ) -> list[list[Completion]]:
        self.prompts_seen += len(prompts)
        return [[Completion(self._continue(str(p))) for _ in range(params.n)] for p in prompts]

    async def close(self) -> None:
        return None
