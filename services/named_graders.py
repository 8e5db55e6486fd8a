"""Graders registered by name: ``{"type": "named", "name": "gsm8k"}`` anywhere a grader goes.

    REFEREE_GRADERS='{"gsm8k": {"type": "weighted", "graders": [
        {"weight": 0.9, "grader": {"type": "math"}},
        {"weight": 0.1, "grader": {"type": "format", "pattern": "think_answer"}}]}}' referee serve
    REFEREE_GRADERS_FILE=graders.json referee serve        # the same mapping, in a file

A team keeps its standard rewards (a weighted math + format reward, a code grader with its
limits, a rubric) in one place on the server, and trainers refer to them by name. A registered
grader is a template: parts that need a reference (or a code grader its tests) may leave them
out, and each item gives its own, ``{"type": "named", "name": "gsm8k", "reference": "42"}``.

A named grader is expanded where a request comes in (``/v1/rewards``, ``/v1/jobs``, the OpenRLHF
and slime routes, ``referee rewards``), so the rest of the server, and a job's workers, only see
concrete graders. The registry is checked when the server starts: a spec that is not a valid
grader (references and tests aside), or one that is itself ``named``, stops the start with the
reason. An unknown name in a request is a 422 that lists the registered names; a template whose
parts still lack a reference after the item's is put in is a 422 that says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from referee.client.errors import InvalidRequest
from referee.client.grader_specs import fill_grader, plain
from referee.client.models import Grader, NamedGrader, RewardItem
from referee.services.settings import Settings
from referee.verifiers.tree import iter_leaves, map_leaves

__all__ = ["GraderRegistry"]

_GRADER: TypeAdapter[Any] = TypeAdapter(Grader)


def _has_named(grader: Mapping[str, Any]) -> bool:
    try:
        return any(leaf["type"] == "named" for leaf in iter_leaves(dict(grader), inner=True))
    except (KeyError, TypeError):  # not a grader's shape: validating it says what is wrong
        return False


_PLACEHOLDER_TESTS = [{"stdin": "", "stdout": ""}]


def _validate_template(spec: Mapping[str, Any]) -> None:
    """Validate a registered grader with a placeholder reference: "0" (math, choices, strings,
    sql), else "[]" (a tool_call's reference calls: none)."""
    try:
        _GRADER.validate_python(fill_grader(spec, "0", _PLACEHOLDER_TESTS))
    except ValidationError as first:
        try:
            _GRADER.validate_python(fill_grader(spec, "[]", _PLACEHOLDER_TESTS))
        except ValidationError as second:  # the one that says least wrong says what is
            raise (second if second.error_count() < first.error_count() else first) from None


class GraderRegistry:
    """Name -> grader template (a plain dict)."""

    def __init__(self, specs: Mapping[str, Any] | None = None) -> None:
        self._specs: dict[str, dict[str, Any]] = {}
        for name, spec in (specs or {}).items():
            try:
                NamedGrader(name=name)
            except ValidationError as exc:
                raise ValueError(
                    f"REFEREE_GRADERS: {name!r} is not a usable name (letters, digits, "
                    "'_', '.', ':', '-'; at most 128)"
                ) from exc
            if not isinstance(spec, Mapping) or "type" not in spec:
                raise ValueError(f"REFEREE_GRADERS: {name!r} must be a grader object with a `type`")
            if _has_named(spec):
                raise ValueError(
                    f"REFEREE_GRADERS: {name!r} refers to a named grader; register the grader "
                    "itself"
                )
            try:  # a template: references and tests come with each item
                _validate_template(spec)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ValueError(
                    f"REFEREE_GRADERS: {name!r} is not a valid grader: {where}: {first['msg']}"
                ) from exc
            self._specs[name] = plain(spec)

    @classmethod
    def from_settings(cls, settings: Settings) -> GraderRegistry:
        specs: dict[str, Any] = {}
        if settings.graders_file:
            path = Path(settings.graders_file)
            try:
                loaded = json.loads(path.read_text(encoding="utf-8"))
            except OSError as exc:
                raise ValueError(f"REFEREE_GRADERS_FILE: cannot read {path}: {exc}") from exc
            except json.JSONDecodeError as exc:
                raise ValueError(f"REFEREE_GRADERS_FILE: {path} is not JSON: {exc}") from exc
            if not isinstance(loaded, dict):
                raise ValueError(f"REFEREE_GRADERS_FILE: {path} must hold a JSON object")
            specs.update(loaded)
        specs.update(settings.graders or {})
        return cls(specs)

    @property
    def specs(self) -> dict[str, dict[str, Any]]:
        return {name: dict(spec) for name, spec in self._specs.items()}

    def expand(self, grader: Mapping[str, Any], where: str = "grader") -> dict[str, Any]:
        """``grader`` with every named leaf replaced by its template, filled with the leaf's
        reference and tests."""

        def named(leaf: dict[str, Any], at: str) -> dict[str, Any]:
            if leaf["type"] != "named":
                return leaf
            name = leaf["name"]
            if name not in self._specs:
                known = ", ".join(sorted(self._specs)) or "none (set REFEREE_GRADERS)"
                raise InvalidRequest(
                    f"{at}: no grader named {name!r} on this server; registered: {known}"
                )
            return fill_grader(self._specs[name], leaf.get("reference"), leaf.get("tests"))

        return map_leaves(dict(grader), named, inner=True, where=where)

    def expand_items(self, items: Sequence[RewardItem], where: str = "items") -> list[RewardItem]:
        """The items with their named graders expanded (the same objects where there are none).
        An unknown name, or a template still missing a reference, raises
        :class:`InvalidRequest` (422) naming the item."""
        out = list(items)
        for n, item in enumerate(items):
            if item.grader.type not in ("named", "weighted", "length_penalty"):
                continue
            raw = item.grader.model_dump(exclude_none=True)
            if not _has_named(raw):
                continue
            at = f"{where}.{n}.grader"
            expanded = self.expand(raw, at)
            try:
                grader = _GRADER.validate_python(expanded)
            except ValidationError as exc:
                first = exc.errors()[0]
                loc = ".".join(str(p) for p in first["loc"])
                hint = (
                    ' (give it with {"type": "named", "name": ..., "reference": ...})'
                    if first["type"] == "missing"
                    else ""
                )
                raise InvalidRequest(
                    f"{at}: the registered grader, filled with this item's reference and tests, "
                    f"is not complete: {loc}: {first['msg']}{hint}"
                ) from exc
            out[n] = item.model_copy(update={"grader": grader})
        return out
