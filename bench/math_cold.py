"""How much of the math verifier's speed comes from its caches: checks/s with warm and cleared.

    .venv/bin/python -m bench.math_cold                    # writes bench/out/math_cold.md
    .venv/bin/python -m bench.math_cold --out docs/bench   # the report docs/benchmarks.md cites

The same seeded mixes as ``python -m bench.math`` (bench/math_mix.py: the realistic mix of
10,000 rollouts in groups of 8 per reference, and the purely symbolic mix of 500), checked by
referee's ``verify`` in this process, one check at a time: once with its caches as a server keeps
them (parsed references and answers reused across a group), once with every cache of
``referee.verifiers.math`` cleared before each check, so no answer or reference string is ever
seen twice; both start from empty caches, after a warm-up pass. checks/s = checks / the sum of
the per-check times, as in bench.math's in-process rows; the fastest of 3 alternating rounds.
Hostile items are refused by the guards in microseconds, so no deadline is needed here.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.math_mix import MixItem, realistic_mix, symbolic_mix

ROOT = Path(__file__).resolve().parent.parent


def _caches() -> list[Callable[[], None]]:
    """``cache_clear`` of every functools cache in referee.verifiers.math's modules."""
    import referee.verifiers.math  # noqa: F401  (loads its modules)

    clears = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("referee.verifiers.math") or module is None:
            continue
        for attr in vars(module).values():
            clear = getattr(attr, "cache_clear", None)
            if callable(clear):
                clears.append(clear)
    return clears


def rate(items: Sequence[MixItem], cold: bool) -> tuple[float, float]:
    """(checks/s, share agreeing with the mix's labels) of one pass over ``items``."""
    from referee.verifiers.math import verify

    clears = _caches()
    for clear in clears:  # both passes start empty; the warm one then keeps what it fills
        clear()
    if not cold:
        clears = []
    total, agree = 0.0, 0
    for item in items:
        for clear in clears:
            clear()
        started = time.perf_counter()
        result: Any = verify(item.response, item.reference)
        total += time.perf_counter() - started
        agree += (result.score == 1.0) == item.correct
    return len(items) / total, agree / len(items)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.math_cold", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--quick", action="store_true", help="1,000 + 100 items (seconds)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each (the fastest kept)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out", help="output folder")
    args = ap.parse_args(argv)
    mixes = {
        "realistic mix": realistic_mix(1000 if args.quick else 10_000, seed=0),
        "symbolic mix": symbolic_mix(100 if args.quick else 500, seed=1),
    }
    for items in mixes.values():  # imports, compiled patterns, first calls: out of the way
        rate(items, cold=False)
    lines = [
        "# Math verification with warm and cleared caches",
        "",
        "referee's `verify` in one process, one check at a time; caches warm (as a server keeps "
        "them) or cleared before every check (no answer or reference string seen twice). "
        f"checks/s = checks / sum of per-check times; the fastest of {args.rounds} alternating "
        "rounds of each, after one warm-up pass.",
        "",
        "| mix | items | warm caches, checks/s | cleared caches, checks/s | cleared / warm | "
        "agrees with labels |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, items in mixes.items():
        warm = cold = 0.0
        for _ in range(args.rounds):  # alternating; the fastest round of each
            w, agree = rate(items, cold=False)
            c, agree_cold = rate(items, cold=True)
            assert agree == agree_cold, "the caches changed a verdict"
            warm, cold = max(warm, w), max(cold, c)
        lines.append(
            f"| {name} | {len(items):,} | {warm:,.0f} | {cold:,.0f} | {cold / warm:.2f}x | "
            f"{agree:.1%} |"
        )
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "math_cold.md").write_text(text)
    print("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
