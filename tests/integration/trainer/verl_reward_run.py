"""Run inside veRL 0.9.1's environment (peer_code_compat.verl_python): score rollouts with
veRL's own reward code and the overrides ``referee train ppo`` wrote, print what veRL computed.

    python verl_reward_run.py SPEC.json   ->  JSON on stdout

SPEC: ``overrides`` (ppo_overrides.json), ``parquet`` (train.parquet), ``responses`` (one per
row, in order; several rows may repeat a prompt), ``tokenizer_dir`` (empty folder to save the
byte tokenizer in; it becomes the model path veRL loads its tokenizer from).

1. veRL's own config (verl/trainer/config/ppo_trainer.yaml) composed with hydra and the
   overrides: an unknown key fails here, as in ``main_ppo``.
2. veRL 0.9.1's reward loop: ``RewardLoopWorker(config).compute_score_batch(data)``, which
   loads the reward function from ``reward.custom_reward_function`` and runs the configured
   manager (``naive``) on each trajectory concurrently.
3. veRL's older managers, still shipped (``verl/workers/reward_manager``): ``naive`` with
   ``compute_score``, and ``batch`` with ``compute_score_batch`` from the same file, as
   ``reward_model.reward_manager=naive|batch`` ran them before 0.9.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _data(rows: list[dict[str, Any]], responses: list[str], tokenizer: Any) -> Any:
    import numpy as np
    import torch
    from verl import DataProto

    prompts = [
        tokenizer(json.dumps(r["prompt"]), add_special_tokens=False)["input_ids"] for r in rows
    ]
    answers = [
        tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        for t in responses
    ]
    p_len = max(len(p) for p in prompts)
    r_len = max(len(a) for a in answers) + 3  # right padding, as veRL's rollout leaves it
    pad = tokenizer.pad_token_id
    prompt_ids = torch.tensor([[pad] * (p_len - len(p)) + p for p in prompts])
    response_ids = torch.tensor([a + [pad] * (r_len - len(a)) for a in answers])
    mask = torch.tensor(
        [
            [0] * (p_len - len(p)) + [1] * len(p) + [1] * len(a) + [0] * (r_len - len(a))
            for p, a in zip(prompts, answers, strict=True)
        ]
    )
    return DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": response_ids,
            "input_ids": torch.cat([prompt_ids, response_ids], dim=1),
            "attention_mask": mask,
        },
        non_tensors={
            "data_source": np.array([r["data_source"] for r in rows], dtype=object),
            "reward_model": np.array([r["reward_model"] for r in rows], dtype=object),
            "extra_info": np.array([dict(r["extra_info"]) for r in rows], dtype=object),
        },
    )


def _legacy(done: dict[str, Any]) -> dict[str, Any]:
    """An older manager's answer: the reward tensor's per-row sums and the extra info lists."""
    return {
        "scores": [float(x) for x in done["reward_tensor"].sum(dim=-1).tolist()],
        "reward_extra_info": {
            k: [v if isinstance(v, bool) else float(v) for v in vs]
            for k, vs in done["reward_extra_info"].items()
        },
    }


def main() -> None:
    spec = json.loads(open(sys.argv[1]).read())
    import pyarrow.parquet as pq
    import verl
    from hydra import compose, initialize_config_dir
    from transformers import ByT5Tokenizer
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.utils.ray_utils import get_event_loop
    from verl.workers.reward_manager.batch import BatchRewardManager
    from verl.workers.reward_manager.naive import NaiveRewardManager as LegacyNaiveRewardManager

    ByT5Tokenizer(extra_ids=0).save_pretrained(spec["tokenizer_dir"])
    overrides = [o for o in spec["overrides"] if not o.startswith("actor_rollout_ref.model.path=")]
    overrides.append(f"actor_rollout_ref.model.path={spec['tokenizer_dir']}")
    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = compose(config_name="ppo_trainer", overrides=overrides)

    table = pq.read_table(spec["parquet"]).to_pylist()
    rows = [table[i % len(table)] for i in range(len(spec["responses"]))]
    out: dict[str, Any] = {"verl_version": verl.__version__}

    async def reward_loop() -> list[dict[str, Any]]:
        worker = RewardLoopWorker(config)
        tokenizer = worker.input_tokenizer
        return await worker.compute_score_batch(_data(rows, spec["responses"], tokenizer))

    loop = get_event_loop()
    results = loop.run_until_complete(reward_loop())
    out["reward_loop"] = [
        {"reward_score": float(r["reward_score"]), "reward_extra_info": r["reward_extra_info"]}
        for r in results
    ]
    out["reward_loop_manager"] = config.reward.reward_manager.name

    # the older per-sample manager (verl/workers/reward_manager/naive.py)
    tokenizer = ByT5Tokenizer.from_pretrained(spec["tokenizer_dir"])
    legacy = LegacyNaiveRewardManager(
        tokenizer, num_examine=0, compute_score=get_custom_reward_fn(config)
    )
    done = legacy(_data(rows, spec["responses"], tokenizer), return_dict=True)
    out["naive_manager"] = _legacy(done)

    # the older batch manager, with the batch function of the same module
    config.reward.custom_reward_function.name = "compute_score_batch"
    batch_fn = get_custom_reward_fn(config)
    manager = BatchRewardManager(tokenizer, num_examine=0, compute_score=batch_fn)
    done = manager(_data(rows, spec["responses"], tokenizer), return_dict=True)
    out["batch_manager"] = _legacy(done)
    print(json.dumps(out, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


if __name__ == "__main__":
    main()
