"""Print the file veRL's ``custom_reward_function.path`` should name (referee's veRL module).

python -m referee.trainer_adapter.verl_path
"""

from __future__ import annotations

__all__ = ["reward_module_path"]


def reward_module_path() -> str:
    """The path of :mod:`referee.trainer_adapter.verl`, found without importing it."""
    from importlib.util import find_spec

    spec = find_spec("referee.trainer_adapter.verl")
    if spec is None or spec.origin is None:  # pragma: no cover - the package is installed
        raise RuntimeError("referee.trainer_adapter.verl is not installed")
    return spec.origin


if __name__ == "__main__":
    print(reward_module_path())
