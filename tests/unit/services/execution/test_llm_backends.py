"""The one builder of judge and policy backends: what a bad setting says, and torch's threads."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from referee.services.execution.llm import build_backend, build_policy
from referee.services.settings import Settings


@pytest.fixture
def restore_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_none_is_no_backend() -> None:
    assert build_backend("none", None) is None


@pytest.mark.parametrize(
    ("kind", "model", "base_url", "message"),
    [
        ("openai", None, "http://127.0.0.1:1", "REFEREE_JUDGE_MODEL is required"),
        ("openai", "m", None, "REFEREE_JUDGE_BASE_URL is required"),
        ("llama", "m", None, "unknown backend 'llama'"),
    ],
)
def test_a_bad_setting_names_what_to_set(
    kind: str, model: str | None, base_url: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_backend(kind, model, base_url=base_url, what="JUDGE")


@pytest.mark.slow  # about 1 s: loads a model in a subprocess
def test_torch_threads_caps_an_in_process_model(restore_threads: None) -> None:
    torch.set_num_threads(2)
    settings = Settings(policy_backend="transformers", policy_model="tiny-random", torch_threads=1)
    policy = build_policy(settings)
    assert policy is not None
    assert torch.get_num_threads() == 1


def test_without_torch_threads_torch_keeps_its_own(restore_threads: None) -> None:
    torch.set_num_threads(2)
    build_policy(Settings(policy_backend="transformers", policy_model="tiny-random"))
    assert torch.get_num_threads() == 2
