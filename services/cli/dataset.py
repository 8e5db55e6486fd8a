"""``referee dataset``: a JSONL training set of generated problems, for TRL, veRL or OpenRLHF.

    referee dataset --task basic_arithmetic --n 1000 --seed 1 --out train.jsonl
    referee dataset --task sudoku --level 2 --n 500 --out sudoku.jsonl --prompt-format text
    referee dataset --list                      # the task families and their levels

Each line is one problem, in the columns the three trainers read:

- ``prompt``: the chat messages (``[{"role": "user", "content": ...}]``; ``--prompt-format
  text``: the text) — TRL's ``prompt``, veRL's ``prompt``, OpenRLHF's ``--input_key prompt``
  with ``--apply_chat_template``;
- ``answer``: the reference answer ("" for tasks that check a proposed solution) — TRL's column,
  OpenRLHF's ``--label_key answer``;
- ``data_source``, ``ability``, ``reward_model: {"style": "rule", "ground_truth"}`` and
  ``extra_info: {"index", "task", "seed", "level", "grader"}`` — veRL's RL dataset fields;
- ``grader``: the ``procedural`` grader as JSON, which referee's TRL reward function reads from
  the ``grader`` column and its veRL ``compute_score`` from ``extra_info["grader"]``.

The same task, seed, level and config give the same file (families whose generators depend on
the hash seed are generated under ``PYTHONHASHSEED=0``, set by re-running the command).
Problems are generated in this process, with a progress bar.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

__all__ = ["register", "rows"]

_CHUNK = 64


def rows(
    task: str,
    n: int,
    seed: int,
    config: dict[str, Any] | None = None,
    level: int | None = None,
    instruction: str | None = None,
    prompt_format: str = "chat",
    progress: Any = None,
) -> Any:
    """Yield the dataset rows (dicts) for ``n`` problems."""
    from referee.client.environment_models import DEFAULT_INSTRUCTION
    from referee.verifiers import procedural

    instruction = DEFAULT_INSTRUCTION if instruction is None else instruction
    config = dict(config or {})
    if level is not None:
        config = procedural.config_at_level(task, level, config)
    category = next((f["category"] for f in procedural.families() if f["name"] == task), "")
    for start in range(0, n, _CHUNK):
        for p in procedural.generate(task, config, seed, min(_CHUNK, n - start), start):
            prompt = f"{p['question']}\n\n{instruction}".rstrip()
            grader = {
                "type": "procedural",
                "task": task,
                "entry": p["entry"],
                "config": config,
                "level": level,
            }
            grader_json = json.dumps(grader, separators=(",", ":"))
            answer = p["answer"] or ""
            yield {
                "prompt": [{"role": "user", "content": prompt}]
                if prompt_format == "chat"
                else prompt,
                "answer": answer,
                "grader": grader_json,
                "data_source": f"reasoning_gym/{task}",
                "ability": category,
                "reward_model": {"style": "rule", "ground_truth": answer},
                "extra_info": {
                    "index": p["index"],
                    "task": task,
                    "seed": seed,
                    "level": level,
                    "grader": grader_json,
                },
            }
            if progress is not None:
                progress(1)


def _dataset(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from referee.verifiers import procedural

    if not procedural.available():
        print(
            "referee dataset needs reasoning-gym: pip install 'referee[environments]'",
            file=sys.stderr,
        )
        return 2
    if args.list:
        for f in procedural.families():
            print(f"{f['name']:<32} {f['category']:<12} levels={f['levels']:<3} {f['description']}")
        return 0
    if not args.task:
        print("referee dataset: --task is required (--list shows the tasks)", file=sys.stderr)
        return 2
    if (
        args.task in procedural.HASH_SEED_DEPENDENT
        and os.environ.get("PYTHONHASHSEED") != "0"
        and sys.argv[1:2] == ["dataset"]  # started as `referee dataset`: run it again as such
    ):
        # Its generator iterates over sets of strings: fix the hash seed, so the file is the same
        # on every run.
        os.execve(
            sys.executable,
            [sys.executable, "-m", "referee.services.cli.main", *sys.argv[1:]],
            {**os.environ, "PYTHONHASHSEED": "0"},
        )
    try:
        config = json.loads(args.config) if args.config else {}
    except json.JSONDecodeError as exc:
        print(f"referee dataset: --config is not JSON: {exc.msg}", file=sys.stderr)
        return 2
    if not isinstance(config, dict):
        print("referee dataset: --config must be a JSON object", file=sys.stderr)
        return 2
    out = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout
    bar = tqdm(total=args.n, unit="problem", desc=args.task, file=sys.stderr, disable=args.quiet)
    try:
        for row in rows(
            args.task,
            args.n,
            args.seed,
            config,
            args.level,
            args.instruction,
            args.prompt_format,
            bar.update,
        ):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    except procedural.ProceduralError as exc:
        print(f"referee dataset: {exc}", file=sys.stderr)
        return 2
    finally:
        bar.close()
        if out is not sys.stdout:
            out.close()
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "dataset", help="write generated problems (reasoning-gym) as a JSONL dataset"
    )
    p.add_argument("--task", help="the task family (see --list)")
    p.add_argument("--n", type=int, default=1000, help="how many problems")
    p.add_argument("--seed", type=int, default=0, help="same seed, same problems")
    p.add_argument("--level", type=int, default=None, help="a difficulty level of the task")
    p.add_argument("--config", default=None, help="config fields as a JSON object")
    p.add_argument("--instruction", default=None, help="text appended to each question")
    p.add_argument("--prompt-format", choices=("chat", "text"), default="chat")
    p.add_argument("--out", help="output file (default: stdout)")
    p.add_argument("--list", action="store_true", help="list the task families and exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_dataset)
