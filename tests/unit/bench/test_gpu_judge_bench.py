"""The pure parts of bench/gpu_judge.py (the GPU run itself needs vLLM: bench/gpu_judge.sh).

The benchmark's fairness rests on these: the raw vLLM path must get exactly the prompts and the
work the judge asks for, and the report must compute the ratio the right way round."""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest

from referee.genrm.backend import Completion, Prompt, SamplingParams
from referee.genrm.guards import screen
from referee.genrm.judges import judge_pointwise

ROOT = Path(__file__).resolve().parents[3]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "referee_bench_gpu_judge", ROOT / "bench" / "gpu_judge.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


gpu_judge = _load()


class Recording:
    name = "recording"
    model_name = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[list[Prompt], SamplingParams]] = []

    async def generate(
        self, prompts: Sequence[Prompt], params: SamplingParams
    ) -> list[list[Completion]]:
        self.calls.append((list(prompts), params))
        lp = {"Yes": -0.5, "No": -1.0}
        return [[Completion(text="[RESULT] Yes", label_logprobs=lp)] for _ in prompts]

    async def close(self) -> None:
        return None


@pytest.mark.parametrize("workload", ["verdict", "label_probs"])
def test_raw_path_gets_the_judges_exact_prompts_and_parameters(workload: str) -> None:
    items = gpu_judge.bench_items(20)
    assert len({(i.prompt, i.response) for i in items}) == 20
    assert all(screen(i.response) is None for i in items)  # no item is short-cut by the guards
    backend = Recording()
    results = asyncio.run(
        judge_pointwise(backend, items, max_tokens=64, label_probs=workload == "label_probs")
    )
    assert all(r.outcome == "judged" for r in results)
    [(prompts, params)] = backend.calls
    assert prompts == gpu_judge.judge_prompts(items, workload)
    assert params == gpu_judge.referee_params(workload, 64)


def test_raw_sampling_arguments() -> None:
    kw = gpu_judge.raw_sampling_kwargs("verdict", 64, [5, 3], True)
    assert kw == {"temperature": 0.0, "max_tokens": 64}
    kw = gpu_judge.raw_sampling_kwargs("label_probs", 64, [5, 3], True)
    assert kw == {"temperature": 0.0, "max_tokens": 1, "logprob_token_ids": [3, 5]}
    kw = gpu_judge.raw_sampling_kwargs("label_probs", 64, [5, 3], False)
    assert kw == {"temperature": 0.0, "max_tokens": 1, "logprobs": 20}


def test_report_ratio_and_target() -> None:
    row = gpu_judge.Row
    rows = [
        row("verdict", "raw vLLM", 2.0, 1000, 2.0),
        row("verdict", "judge", 2.1, 1000, 2.0),
        row("label_probs", "judge, 8 callers", 0.5, 1000, 0.4),
    ]
    text = gpu_judge.report(rows, {"GPU": "test"})
    assert "| verdict | judge | 2.100 | 476 | 0.952 |" in text
    assert "| label_probs | judge, 8 callers | 0.500 | 2000 | 0.800 |" in text
    assert "NOT met (lowest judge ratio 0.800)" in text
    assert "- GPU: test" in text
    assert "target >= 0.9: met" in gpu_judge.report(rows[:2], {})


def test_environment_problems_name_what_is_missing() -> None:
    requires = ["numpy", "torch==2.14.0", "torchvision==0.29.0", 'foo; extra == "x"']
    assert gpu_judge.torch_pin(requires) == "2.14.0"
    assert gpu_judge.torch_pin(["torch>=2"]) is None
    assert gpu_judge.environment_problems(None, requires, "2.14.0+cu130", True) == []
    problems = gpu_judge.environment_problems(
        "ModuleNotFoundError: No module named 'vllm'", [], "2.11.0", False
    )
    assert len(problems) == 2 and "vllm==0.33.0" in problems[0] and "CUDA" in problems[1]
    [mismatch] = gpu_judge.environment_problems(None, requires, "2.11.0+cu130", True)
    assert "torch==2.14.0" in mismatch and "2.11.0" in mismatch


@pytest.mark.slow  # about 2 s: runs the script
def test_script_without_vllm_says_what_is_missing_and_fails(tmp_path: Path) -> None:
    proc = subprocess.run(
        ["bash", str(ROOT / "bench" / "gpu_judge.sh")],
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "REFEREE_WHEELS": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "vLLM cannot be imported" in proc.stdout
    assert "holds no vllm-*.whl" in proc.stderr
