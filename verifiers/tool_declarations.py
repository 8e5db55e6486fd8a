"""What tool definitions declare about a call, and checking a call against it.

``tools`` come as OpenAI function definitions (``{"type": "function", "function": {"name",
"parameters": {"type": "object", "properties", "required"}}}``), bare function documents
(BFCL's ``function`` column: ``{"name", "parameters": {...}}``) or xLAM's ``{"name",
"parameters": {arg: {"type", "default"}}}``. A call to a declared tool is checked as BFCL's AST
checker checks it (``bfcl_eval/eval_checker/ast_eval/ast_checker.py``):

- each ``required`` parameter is given;
- no parameter the declaration lacks is given;
- each value is of its declared type, Python's types as BFCL maps them (``integer``: an int, not
  a float or a bool; ``float`` and JSON Schema's ``number``: a float, an int accepted; ``string``
  and ``any``: a str; ``boolean``: a bool; ``array``, ``list`` and ``tuple``: a list, its items of
  ``items``' type one level deep, as BFCL checks them; ``dict`` and ``object``: an object; xLAM's
  ``str``, ``int``, ``float``, ``bool``, ``list``, ``dict``, ``List[...]``, ``... , optional``
  alike; a list of types, JSON Schema's ``["string", "null"]``: any of them), or of the type of
  the reference's value (BFCL's "variable" rule: a possible answer that is a string where the
  declaration says integer names a variable, and a string is then the right type). A type this
  table does not know is not checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Declaration", "declarations_from_tools", "type_ok"]

_TYPES: dict[str, type] = {
    "string": str,
    "str": str,
    "any": str,
    "integer": int,
    "int": int,
    "float": float,
    "number": float,
    "boolean": bool,
    "bool": bool,
    "array": list,
    "list": list,
    "tuple": list,
    "dict": dict,
    "object": dict,
    "null": type(None),
}
_NESTED = frozenset({"array", "list", "tuple"})
"""Declared types whose items BFCL checks (one level)."""
_FLOATS = frozenset({"float", "number"})
"""Declared types an int is taken for (BFCL converts an int given for ``float``)."""


@dataclass(frozen=True, slots=True)
class Declaration:
    """One tool's parameters as its definition declares them."""

    properties: Mapping[str, Any] | None
    """Parameter name -> its schema; None: the definition declares no parameters to check."""
    required: frozenset[str] = frozenset()
    defaults: dict[str, Any] = field(default_factory=dict)


def _parameters(spec: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, frozenset[str]]:
    params = spec.get("parameters")
    if not isinstance(params, Mapping):
        return None, frozenset()
    props = params.get("properties")
    if isinstance(props, Mapping):  # JSON Schema (OpenAI's, BFCL's documents)
        required = params.get("required")
        names = required if isinstance(required, list) else ()
        return props, frozenset(n for n in names if isinstance(n, str))
    # xLAM's: the parameters map straight to their schemas
    if params and all(isinstance(v, Mapping) for v in params.values()):
        return params, frozenset()
    return None, frozenset()


def declarations_from_tools(tools: Sequence[Mapping[str, Any]] | None) -> dict[str, Declaration]:
    """The declarations by tool name (definitions without a name are skipped)."""
    out: dict[str, Declaration] = {}
    for tool in tools or ():
        spec = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            continue
        props, required = _parameters(spec)
        defaults = {
            k: v["default"]
            for k, v in (props or {}).items()
            if isinstance(v, Mapping) and "default" in v
        }
        out[spec["name"]] = Declaration(props, required, defaults)
    return out


def _declared(schema: Any) -> tuple[str, type] | None:
    """The declared type's name and Python type, or None when it is not one to check."""
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    if not isinstance(kind, str):
        return None
    base = kind.split(",", 1)[0].strip()  # xLAM's "int, optional"
    lowered = base.lower()
    if lowered.startswith("list[") or lowered.startswith("tuple["):
        return "list", list
    if lowered.startswith("dict["):
        return "dict", dict
    found = _TYPES.get(base) or _TYPES.get(lowered)
    return None if found is None else (lowered if lowered in _TYPES else base, found)


def _answer_type(answers: Sequence[Any]) -> type | None:
    """BFCL's type of the possible answers: the first that is not ``""`` (optional)."""
    return next((type(a) for a in answers if not (isinstance(a, str) and a == "")), None)


def _item_ok(item: Any, answers: Sequence[Any], expected: type) -> bool:
    if type(item) is expected:
        return True
    return type(item) is _answer_type(answers)


def type_ok(value: Any, answers: Sequence[Any] | None, schema: Any) -> bool:
    """``value`` is of the type ``schema`` declares, as BFCL's ``type_checker`` sees it, given
    the reference's possible values for it (``answers``; None when the reference has none)."""
    kinds = schema.get("type") if isinstance(schema, Mapping) else None
    if isinstance(kinds, list):  # JSON Schema's ["string", "null"]: any of them
        named = [k for k in kinds if isinstance(k, str)]
        return not named or any(type_ok(value, answers, {**schema, "type": k}) for k in named)
    declared = _declared(schema)
    if declared is None:
        return True
    name, expected = declared
    if name in _FLOATS and type(value) is int:
        value = float(value)
    answers = answers or ()
    if type(value) is expected:
        items = _declared(schema.get("items")) if name in _NESTED else None
        if items is None or not isinstance(value, list):
            return True
        # one level of items, against each possible answer that is a list (BFCL's loop)
        for answer in answers or ([],):
            if not isinstance(answer, list):
                return True
            if all(_item_ok(item, answer, items[1]) for item in value):
                return True
        return False
    return type(value) is _answer_type(answers)
