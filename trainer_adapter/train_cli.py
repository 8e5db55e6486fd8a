"""``referee train``: GRPO through TRL and PPO through veRL, with rewards from referee.

    referee train grpo --model PATH --dataset data.jsonl --grader '{"type": "math"}' \\
        [--server URL] [--loss-type dapo] [--num-generations 8] [--beta 0.0] ...
    referee train ppo --model PATH --dataset data.jsonl --server URL --out runs/ppo [--dry-run]

The dataset is JSONL: a ``prompt`` (text or chat messages) per line, the reference in a column
such as ``answer``/``reference``/``solution``, and optionally a per-row ``grader``.

``grpo`` is a thin wrapper over TRL's ``GRPOTrainer`` with :mod:`referee.trainer_adapter.trl`'s
reward function; without ``--server`` it starts an embedded referee in the process. It prints
progress, appends every logged step to ``metrics.jsonl`` and draws ``reward.png`` in the output
directory. Any other ``GRPOConfig`` field can be set with ``--trl KEY=VALUE``.

``ppo`` writes veRL's data (``train.parquet``), the command line (``run_ppo.sh``) and its
overrides (``ppo_overrides.json``) for a PPO run with a critic and GAE whose reward is
:func:`referee.trainer_adapter.verl.compute_score` with veRL 0.9.1's keys (``reward.*``, its
``naive`` reward-loop manager), then runs it when veRL is installed; without veRL it says how to
install it and exits with status 3. The rows' ``data_source`` is ``referee`` unless the dataset
gives one; either way the reward comes from referee, as the custom reward function takes every
row.

trl, torch and datasets are imported only when a command runs (the ``train`` extra).
"""

from __future__ import annotations

import argparse
from typing import Any

from referee.trainer_adapter.train_common import read_jsonl
from referee.trainer_adapter.train_grpo import LOSS_TYPES, add_grpo
from referee.trainer_adapter.train_ppo import add_ppo, ppo_overrides

__all__ = ["LOSS_TYPES", "ppo_overrides", "read_jsonl", "register"]

# The docstring above is ``referee train --help``'s description. The commands are in
# train_grpo.py and train_ppo.py, what they share in train_common.py.


def register(subparsers: Any) -> None:
    """Add ``train grpo`` and ``train ppo`` to the ``referee`` command's subparsers."""
    train = subparsers.add_parser(
        "train",
        help="train with GRPO (TRL) or PPO (veRL), rewards from referee",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = train.add_subparsers(dest="train_command", required=True)
    add_grpo(sub)
    add_ppo(sub)
