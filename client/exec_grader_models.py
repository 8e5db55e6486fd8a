"""Wire schema of the graders that execute something or read structure: ``sql``, ``tool_call``,
``python`` (OpenAI's python grader, run in the sandbox), and OpenAI's ``score_model`` and
``label_model`` grader objects (mapped onto referee's judge). ``multi`` lives in
:mod:`referee.client.models` (it nests graders). Re-exported there; import them from there.

The OpenAI shapes are accepted as OpenAI documents them (``name``, ``model``, ``input``,
``range``, ``labels``, ``passing_labels``, ``image_tag``, ``sampling_params``), so a team's
existing grader definitions work unchanged; fields referee cannot honour are accepted and
reported (see docs/graders.md).
"""

from __future__ import annotations

import ast
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from referee.client.grader_specs import tool_calls_from_value, tools_from_value

__all__ = [
    "FORMULA_FUNCTIONS",
    "LabelModelGrader",
    "PythonGrader",
    "SQLGrader",
    "ScoreModelGrader",
    "ToolCallGrader",
    "ToolCallSpec",
    "check_formula",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SQLGrader(_Model):
    """Text-to-SQL execution match: the response's query and `reference` run on the database
    `setup` builds (a read-only in-memory SQLite copy per check), or on the server's SQLite file
    `database` names (Spider's and BIRD's `db_id`, opened read-only); the result sets are
    compared as multisets (or sets, or as Spider's evaluation does: `compare`), or in order when
    the reference has ORDER BY."""

    type: Literal["sql"] = "sql"
    setup: str | None = Field(
        None,
        max_length=2_000_000,
        description="SQL statements that build the database (CREATE TABLE, INSERT ...); "
        "give this or `database`.",
        examples=["CREATE TABLE t(x INT); INSERT INTO t VALUES (1), (2);"],
    )
    database: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$",
        description="The name of a SQLite file in the server's REFEREE_SQL_DATABASES_DIR: "
        "`NAME.sqlite`, `NAME.db` or Spider's and BIRD's `NAME/NAME.sqlite`; give this or "
        "`setup`.",
        examples=["concert_singer"],
    )
    reference: str = Field(
        ..., min_length=1, max_length=100_000, examples=["SELECT count(*) FROM t"]
    )
    ordered: bool | None = Field(
        None,
        description="Compare rows in order; default: when the reference has ORDER BY (with "
        "`compare: set`, never).",
    )
    compare: Literal["multiset", "set", "spider"] = Field(
        "multiset",
        description="`multiset`: each row counts as often as it comes, the columns in their "
        "order; `set`: duplicate rows aside, as BIRD's evaluation compares (`set(pred) == "
        "set(gold)`); `spider`: as Spider's test-suite evaluation matches them (DISTINCT "
        "dropped from both queries, the columns in any order, the rows in order when the "
        "reference's text says `order by`).",
    )
    float_digits: int = Field(6, ge=0, le=15, description="Floats are rounded to this.")
    extract: Literal["auto", "none", "fence"] = Field(
        "auto",
        description="`auto`: the last ```sql block, else the last fenced block, else the text "
        "(after </think>); `none`: the whole response is the query; `fence`: the last ```sql "
        "block only (none: no query, as NeMo Gym's bird_sql reads one).",
    )
    timeout_s: float = Field(2.0, gt=0, le=30, description="Deadline of each statement.")
    max_rows: int = Field(10_000, ge=1, le=1_000_000, description="Rows read back per query.")

    @model_validator(mode="after")
    def _one_database(self) -> SQLGrader:
        if (self.setup is None) == (self.database is None):
            raise ValueError(
                "give the database as exactly one of `setup` (SQL that builds it) and "
                "`database` (the name of a SQLite file on the server)"
            )
        return self


class ToolCallSpec(_Model):
    """One expected call. `parameters` is read as `arguments` (ToolRL's and xLAM's tool
    definitions' spelling)."""

    name: str = Field(..., min_length=1, max_length=256, examples=["get_weather"])
    arguments: dict[str, Any] = Field(default_factory=dict, examples=[{"city": "Paris"}])
    allowed: dict[str, list[Any]] | None = Field(
        None,
        description="BFCL's possible answers instead of `arguments`: the values each argument "
        'may take (`""` among them: it may be left out; strings compared as BFCL does, case, '
        "spaces and `,./-_*^` aside). A BFCL ground-truth row (`[{fn: {arg: [values]}}]`) in a "
        "reference column is read into this.",
        examples=[{"city": ["Paris", "Paris, France"], "unit": ["celsius", ""]}],
    )

    @model_validator(mode="before")
    @classmethod
    def _parameters(cls, data: Any) -> Any:
        if isinstance(data, dict) and "parameters" in data and "arguments" not in data:
            data = {("arguments" if k == "parameters" else k): v for k, v in data.items()}
        return data


class ToolCallGrader(_Model):
    """The response's tool calls (OpenAI `tool_calls`, Hermes `<tool_call>` JSON, a JSON
    object/list in the text, Python call syntax, or Qwen3-Coder's and GLM's XML in
    `<tool_call>` blocks, typed by `tools`) against the reference calls: names,
    arguments equal as JSON values (numbers by value; omitted arguments take `tools`'
    defaults, and calls are checked against `tools`' declarations) or among BFCL's possible
    answers (`allowed`), in any order unless `ordered`.
    `exact`: all or nothing; `partial`: ToolRL's match normalised to [0, 1]; `toolrl`:
    ToolRL's reward in [-3, 4]."""

    type: Literal["tool_call"] = "tool_call"
    reference: list[ToolCallSpec] = Field(
        ...,
        max_length=64,
        description="The expected calls; an empty list: no call should be made.",
    )
    scoring: Literal["exact", "partial", "toolrl"] = "exact"
    ordered: bool = Field(False, description="Parallel calls must come in the reference order.")
    extra_arguments: Literal["wrong", "ignored"] = Field(
        "wrong",
        description="`ignored`: a call's arguments the reference does not give are not "
        "compared (NeMo Gym's xlam_fc checks only the expected ones); `wrong`: a call that "
        "gives one does not match.",
    )
    tools: list[dict[str, Any]] | None = Field(
        None,
        max_length=256,
        description="Tool definitions (OpenAI `{type: function, function: {...}}`, a function "
        "document `{name, parameters}` as BFCL's, or xLAM's): an argument left out equals its "
        "declared `default`, and a call to a declared tool must give its `required` "
        "parameters, none it does not declare, each of its declared type (as BFCL's AST checker "
        "checks: `integer` an int, not 3.0).",
    )

    @field_validator("reference", mode="before")
    @classmethod
    def _reference_as_rows_give_it(cls, value: Any) -> Any:
        """The forms datasets keep their calls in: JSON text (xLAM's `answers` column), one
        call object, BFCL's ground truth (`[{fn: {arg: [values]}}]`), ToolRL's `<tool_call>`
        blocks; read as the trainer adapters read a row's column."""
        if type(value) is list and (not value or (type(value[0]) is dict and "name" in value[0])):
            return value  # the usual case, as calls: nothing to read
        if isinstance(value, str | dict) or (
            isinstance(value, list) and all(isinstance(c, dict) and "name" not in c for c in value)
        ):
            calls = tool_calls_from_value(value)
            if calls is not None:
                return calls
            if isinstance(value, str):
                raise ValueError(
                    "a reference given as text must be JSON calls (a list of "
                    '{"name", "arguments"}, as xLAM\'s `answers`), BFCL\'s ground truth or '
                    "ToolRL's <tool_call> blocks"
                )
        return value

    @field_validator("tools", mode="before")
    @classmethod
    def _tools_as_rows_give_them(cls, value: Any) -> Any:
        """`tools` as JSON text (xLAM's `tools` column) or one definition: read as the trainer
        adapters read a row's column."""
        if isinstance(value, str | dict):
            tools = tools_from_value(value)
            if tools is None:
                raise ValueError(
                    "tools given as text must be a JSON list of tool definitions (OpenAI's "
                    "{type: function, function: {...}} or function documents {name, parameters})"
                )
            return tools
        return value


class PythonGrader(_Model):
    """OpenAI's python grader: `source` defines `grade(sample, item) -> float`, run in the
    sandbox (no network, a time and memory limit). `sample` has `output_text`, `output_json`
    (the response parsed as JSON, or null), `output_tools` (its tool calls) and `choices`;
    `item` is the row. A grader that raises, runs out of time or returns something that is not
    a number in [0, 1] gives score null with `valid: false` and the reason."""

    type: Literal["python"] = "python"
    source: str = Field(
        ...,
        min_length=1,
        max_length=256_000,
        examples=["def grade(sample, item):\n    return float(sample['output_text'] == item['a'])"],
    )
    name: str | None = Field(None, max_length=256)
    image_tag: str | None = Field(
        None, max_length=256, description="Accepted for OpenAI compatibility; not used."
    )
    item: dict[str, Any] = Field(
        default_factory=dict, description="The row `grade` receives as `item`."
    )
    pass_threshold: float | None = Field(None, ge=0, le=1, description="Reported in details.")
    timeout_s: float = Field(10.0, gt=0, le=60, description="Wall-clock limit of the grader.")
    memory_mb: int = Field(512, ge=64, le=4096)


class _OpenAIModelGrader(_Model):
    name: str | None = Field(None, max_length=256)
    model: str | None = Field(
        None, max_length=256, description="Accepted; the server's judge model is used."
    )
    input: list[dict[str, Any]] = Field(
        ...,
        min_length=1,
        max_length=64,
        description="OpenAI's messages (`role`, `content`); `{{sample.output_text}}` and "
        "`{{item.*}}` templates are filled in.",
    )
    item: dict[str, Any] = Field(
        default_factory=dict, description="The row the `{{item.*}}` templates read."
    )
    sampling_params: dict[str, Any] | None = Field(None, description="Accepted; not used.")


class ScoreModelGrader(_OpenAIModelGrader):
    """OpenAI's score_model grader, mapped onto referee's `rubric` judge (implicit mode) with
    the grader's messages as the rubric; the judge's 0-1 rating is scaled to `range`."""

    type: Literal["score_model"] = "score_model"
    range: list[float] = Field(default_factory=lambda: [0.0, 1.0], min_length=2, max_length=2)
    pass_threshold: float | None = Field(None, description="Reported in details.")

    @field_validator("range")
    @classmethod
    def _increasing(cls, value: list[float]) -> list[float]:
        if not value[0] < value[1]:
            raise ValueError("range is [low, high] with low < high")
        return value


class LabelModelGrader(_OpenAIModelGrader):
    """OpenAI's label_model grader, mapped onto referee's `rubric` judge: one criterion, "the
    label the instructions give is one of `passing_labels`"; 1.0 when met, else 0.0."""

    type: Literal["label_model"] = "label_model"
    labels: list[str] = Field(..., min_length=1, max_length=64)
    passing_labels: list[str] = Field(..., min_length=1, max_length=64)

    @model_validator(mode="after")
    def _passing_subset(self) -> LabelModelGrader:
        unknown = set(self.passing_labels) - set(self.labels)
        if unknown:
            raise ValueError(f"passing_labels must be among labels: {sorted(unknown)}")
        return self


FORMULA_FUNCTIONS = ("min", "max", "abs", "floor", "ceil", "exp", "sqrt", "log")
_FORMULA_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.Pow,
    ast.BitXor,
    ast.USub,
    ast.UAdd,
)


def check_formula(formula: str, names: set[str]) -> ast.Expression:
    """The parsed ``calculate_output`` formula, or ValueError saying what is not allowed:
    numbers, the graders' names, + - * / ^ (power, as OpenAI's ``^``) and
    :data:`FORMULA_FUNCTIONS`."""
    if len(formula) > 2_000:
        raise ValueError("calculate_output is longer than 2000 characters")
    try:
        tree = ast.parse(formula.replace("**", "^"), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"calculate_output does not parse: {exc}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _FORMULA_NODES):
            raise ValueError(f"calculate_output may not use {type(node).__name__}")
        if isinstance(node, ast.Constant) and (
            isinstance(node.value, bool) or not isinstance(node.value, int | float)
        ):
            raise ValueError(f"calculate_output constants are numbers, not {node.value!r}")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FORMULA_FUNCTIONS:
                raise ValueError(f"calculate_output calls only {', '.join(FORMULA_FUNCTIONS)}")
            if node.keywords or not node.args:
                raise ValueError("calculate_output functions take positional arguments")
        elif isinstance(node, ast.Name) and node.id not in names | set(FORMULA_FUNCTIONS):
            raise ValueError(
                f"calculate_output names {node.id!r}, which is not one of the graders "
                f"({', '.join(sorted(names))})"
            )
    return tree
