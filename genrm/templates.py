"""Prompt templates of the judges: text files with ``{field}`` slots, overridable by directory.

The fixed instructions come first in every template so a server's prefix cache reuses them.
``load_template(name, directory)`` reads ``directory/name.txt`` when it exists, else the packaged
one in ``referee/genrm/templates/``.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

__all__ = ["TEMPLATE_NAMES", "load_template", "reference_block"]

TEMPLATE_NAMES = (
    "pointwise_binary",
    "pointwise_score",
    "rubric_criterion",
    "rubric_implicit",
    "pairwise",
)


@lru_cache(maxsize=64)
def load_template(name: str, directory: str | None = None) -> str:
    if name not in TEMPLATE_NAMES:
        raise ValueError(f"unknown template {name!r}: one of {', '.join(TEMPLATE_NAMES)}")
    if directory:
        custom = Path(directory) / f"{name}.txt"
        if custom.is_file():
            return custom.read_text(encoding="utf-8")
    return (resources.files("referee.genrm") / "templates" / f"{name}.txt").read_text("utf-8")


def reference_block(reference: str | None) -> str:
    return f"\n<reference>\n{reference}\n</reference>\n" if reference else ""
