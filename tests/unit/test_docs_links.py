"""Every relative link of README.md and docs/*.md leads to a file, and its #anchor to a heading.

Anchors follow GitHub's rule: the heading lowercased, punctuation other than ``-`` and ``_``
dropped, spaces made ``-``. Links inside fenced code blocks are not links.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
# a fence as CommonMark reads one: 3+ backticks at a line's start, an info string without
# backticks (a line that opens with ```` ```sql ```` is inline code), closed by as many
_FENCE = re.compile(r"^(`{3,})[^`\n]*\n.*?^\1[ \t]*$", re.S | re.M)


def slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def broken_links(page: Path) -> list[str]:
    text = _FENCE.sub("", page.read_text())
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no such heading")
    return broken


def test_slug_is_githubs() -> None:
    assert slug("What the first `make test` prepares") == "what-the-first-make-test-prepares"
    assert slug("No job lost in `queued`") == "no-job-lost-in-queued"
    assert slug("PPO and `compute_score` (veRL)") == "ppo-and-compute_score-verl"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [gone](missing.md) [bad](#nowhere)\n")
    assert broken_links(page) == ["missing.md: no such file", "#nowhere: no such heading"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve(page: Path) -> None:
    assert broken_links(page) == []
