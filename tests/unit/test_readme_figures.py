"""The benchmark tables of README.md and of the pages under docs/ against their reports.

Benchmark figures live on docs/benchmarks.md (and any page may quote some). A table whose
section names a report (``docs/bench/NAME.md`` before the table, under the same ``##`` heading)
is checked against it: every number of its cells past the first column (the row label) must
appear in the report at the precision the table gives (``6,554`` for 6554, ``12.3x`` for
12.34x, ``18.3`` for 18.31). A figure changed in one place and not the other, or a table whose
numbers no run wrote, fails here. Every table of docs/benchmarks.md, and of a "Benchmarks"
section of any other page, must name its report. Numbers in code spans (``CheckPool(1)``,
``/v1/rewards``) are names, not figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "docs" / "bench"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BENCHMARKS_PAGE = "docs/benchmarks.md"
# The reports whose figures the benchmarks page quotes in a table (one or more tables each).
TABLED_REPORTS = {"math", "sandbox", "sandbox_fusion", "judge", "environments", "trainer", "prm"}

_MENTION = re.compile(r"(?:docs/)?bench/([\w-]+)\.md")
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")
_CODE = re.compile(r"`[^`]*`")


@dataclass
class Table:
    page: str
    line: int  # 1-based line of the header
    section: str
    report: str | None
    rows: list[list[str]]  # body rows, cells stripped


def numbers(text: str) -> list[str]:
    """The figures written in ``text`` (code spans left out), as written: ``3,575.9``."""
    return [m.group(0).rstrip(",") for m in _NUMBER.finditer(_CODE.sub(" ", text))]


def value(figure: str) -> float:
    return float(figure.replace(",", ""))


def tables(page: str, text: str, known_reports: set[str]) -> list[Table]:
    found: list[Table] = []
    section, report = "", None
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("## "):
            section, report = line[3:].strip(), None
        if line.lstrip().startswith("|") and k + 1 < len(lines) and "---" in lines[k + 1]:
            start = k
            k += 2
            rows = []
            while k < len(lines) and lines[k].lstrip().startswith("|"):
                cells = [c.strip() for c in lines[k].strip().strip("|").split("|")]
                rows.append(cells)
                k += 1
            found.append(Table(page, start + 1, section, report, rows))
            continue
        for mention in _MENTION.finditer(line):
            if mention.group(1) in known_reports:
                report = mention.group(1)
        k += 1
    return found


def missing_figures(table: Table, report_text: str) -> list[str]:
    """The table's figures that the report does not contain (at the table's precision)."""
    have = [value(x) for x in numbers(report_text)]
    missing = []
    for row in table.rows:
        for cell in row[1:]:
            for figure in numbers(cell):
                decimals = len(figure.split(".")[1]) if "." in figure else 0
                tolerance = 0.5 * 10.0**-decimals + 1e-9
                if not any(abs(v - value(figure)) <= tolerance for v in have):
                    missing.append(f"{figure} (row {row[0][:60]!r})")
    return missing


def _all_tables() -> list[Table]:
    known = {p.stem for p in REPORTS.glob("*.md")}
    out = []
    for page in PAGES:
        out.extend(tables(str(page.relative_to(ROOT)), page.read_text(), known))
    return out


def _checked() -> list[Table]:
    return [t for t in _all_tables() if t.report is not None]


def _is_benchmark_table(table: Table) -> bool:
    return table.page == BENCHMARKS_PAGE or "benchmark" in table.section.lower()


def test_benchmark_tables_name_their_reports() -> None:
    unnamed = [
        f"{t.page}:{t.line}" for t in _all_tables() if _is_benchmark_table(t) and not t.report
    ]
    assert unnamed == [], f"benchmark tables without a docs/bench report before them: {unnamed}"
    checked = _checked()
    assert len(checked) >= 8  # math, sandbox, SandboxFusion, judge, environments, trainer, PRM x2
    on_page = {t.report for t in checked if t.page == BENCHMARKS_PAGE}
    assert on_page >= TABLED_REPORTS, f"reports without a table on {BENCHMARKS_PAGE}: " + str(
        sorted(TABLED_REPORTS - on_page)
    )


def test_the_section_rule_follows_a_page_of_sections() -> None:
    """On a page of several ``##`` sections, a report named in one does not check the next's."""
    text = (
        "# Benchmarks\n\n## Math\n\nreport `docs/bench/math.md`:\n\n| a | b |\n|---|---|\n"
        "| x | 1 |\n\n## Sandbox\n\n| a | b |\n|---|---|\n| y | 2 |\n"
    )
    first, second = tables(BENCHMARKS_PAGE, text, {"math"})
    assert (first.section, first.report) == ("Math", "math")
    assert (second.section, second.report) == ("Sandbox", None)
    assert _is_benchmark_table(second)


@pytest.mark.parametrize("table", _checked(), ids=lambda t: f"{t.page}:{t.line}:{t.report}")
def test_table_figures_are_in_their_report(table: Table) -> None:
    report = (REPORTS / f"{table.report}.md").read_text()
    missing = missing_figures(table, report)
    assert missing == [], (
        f"{table.page}:{table.line} ({table.section}): figures not in "
        f"docs/bench/{table.report}.md: {missing}"
    )


@pytest.mark.parametrize("table", _checked(), ids=lambda t: f"{t.page}:{t.line}:{t.report}")
def test_a_drifted_figure_is_caught(table: Table) -> None:
    """Each checked table, with one figure moved by a few percent, no longer matches."""
    report = (REPORTS / f"{table.report}.md").read_text()
    cells = [(r, c) for r, row in enumerate(table.rows) for c in range(1, len(row))]
    r, c = next((r, c) for r, c in cells if any(value(x) > 0 for x in numbers(table.rows[r][c])))
    figure = next(x for x in numbers(table.rows[r][c]) if value(x) > 0)
    decimals = len(figure.split(".")[1]) if "." in figure else 0
    drifted = f"{value(figure) * 1.07 + 10.0**-decimals * 3:,.{decimals}f}"
    rows = [list(row) for row in table.rows]
    rows[r][c] = rows[r][c].replace(figure, drifted, 1)
    moved = Table(table.page, table.line, table.section, table.report, rows)
    assert any(drifted in m for m in missing_figures(moved, report)), (figure, drifted)
