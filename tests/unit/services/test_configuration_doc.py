"""docs/configuration.md is the page ``referee.services.settings_doc`` writes from the settings.

Regenerate it with ``python -m referee.services.settings_doc > docs/configuration.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field

from referee.services.settings import Settings
from referee.services.settings_doc import default_text, page, type_text, variable

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "configuration.md"
REGENERATE = "python -m referee.services.settings_doc > docs/configuration.md"


def test_every_setting_has_a_description() -> None:
    bare = [name for name, f in Settings.model_fields.items() if not (f.description or "").strip()]
    assert bare == [], f"settings without a description (services/settings.py): {bare}"


def test_the_page_is_the_generated_one() -> None:
    assert PAGE.read_text() == page(), f"docs/configuration.md is stale: run {REGENERATE}"


def test_a_changed_setting_changes_the_page() -> None:
    class Changed(Settings):
        math_timeout_s: float = Field(7.0, gt=0, le=600, description="Deadline of one check.")
        brand_new_knob: int = Field(3, ge=1, description="A setting the page does not have.")

    text = page(Changed)
    assert text != PAGE.read_text()
    assert "| `REFEREE_BRAND_NEW_KNOB` | integer (≥ 1) | 3 | A setting the page does not" in text
    assert re.search(r"\| `REFEREE_MATH_TIMEOUT_S` \| number \(> 0, ≤ 600\) \| 7 \|", text)


def test_rows_render_types_defaults_and_bounds() -> None:
    fields = Settings.model_fields
    assert default_text(fields["math_workers"]) == "the CPU count"
    assert default_text(fields["api_keys"]) == "(none)"
    assert default_text(fields["judge_backend"]) == "`none`"
    assert default_text(fields["compat_without_api_key"]) == "false"
    assert type_text(fields["api_keys"]) == "comma-separated list"
    assert type_text(fields["sandbox_backend"]) == (
        "one of `bwrap`, `docker`, `unsafe_local`, `remote`"
    )
    assert type_text(fields["max_json_depth"]) == "integer (≥ 8, ≤ 512)"
    assert type_text(fields["graders"]) == "JSON object"
    for name in fields:
        assert f"| `{variable(name)}` |" in PAGE.read_text()


def test_compose_variables_are_settings_or_named_on_the_page() -> None:
    """Every REFEREE_* variable of .env.example is a setting or listed among the others."""
    text = PAGE.read_text()
    settings = {variable(name) for name in Settings.model_fields}
    named = set(re.findall(r"REFEREE_[A-Z_]+", text))
    in_example = set(re.findall(r"REFEREE_[A-Z_]+", (ROOT / ".env.example").read_text()))
    unknown = sorted(v for v in in_example if v not in settings and v not in named)
    assert unknown == [], f".env.example variables neither settings nor on the page: {unknown}"
