"""Wire models of the text graders: ``instruction_following`` (IFEval's verifiable instructions)
and ``text_similarity`` (OpenAI's similarity metrics), plus the OpenAI template fields that let an
OpenAI grader object be sent as it is. Imports only pydantic.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from referee.client.grader_specs import instructions_from_value
from referee.client.instruction_specs import INSTRUCTION_IDS, TULU_FUNCTIONS, validate_kwargs

__all__ = [
    "SAMPLE_TEMPLATE",
    "Instruction",
    "InstructionFollowingGrader",
    "JsonSchemaGrader",
    "OpenAITextGrader",
    "TextSimilarityGrader",
    "check_openai_input",
    "check_reference_text",
    "is_item_template",
]

SAMPLE_TEMPLATE = "{{sample.output_text}}"
_SAMPLE = re.compile(r"\{\{\s*sample\.output_text\s*\}\}")
_ITEM = re.compile(r"\{\{\s*item\.[A-Za-z0-9_.]+\s*\}\}")


def is_item_template(value: object) -> bool:
    """Whether ``value`` is an OpenAI ``{{item.field}}`` template (the row's reference)."""
    return isinstance(value, str) and bool(_ITEM.fullmatch(value.strip()))


def check_openai_input(value: str | None) -> str | None:
    """OpenAI's ``input`` field: referee grades the response, so only the response's template."""
    if value is not None and not _SAMPLE.fullmatch(value.strip()):
        raise ValueError(
            f"input must be {SAMPLE_TEMPLATE!r} (referee grades the item's response), "
            f"not {value[:200]!r}"
        )
    return value


def check_reference_text(value: str) -> str:
    if is_item_template(value):
        raise ValueError(
            f"the reference {value!r} is an OpenAI item template: send the row's reference text "
            "(the trainer adapters fill it in from the row's reference column)"
        )
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Instruction(_Model):
    id: str = Field(
        ...,
        max_length=64,
        examples=["length_constraints:number_words"],
        description="IFEval's instruction id: "
        + ", ".join(INSTRUCTION_IDS)
        + "; the ids open-instruct's IFEvalG adds (copy:repeat_phrase, keywords:word_once, ...); "
        + "or Tülu 3's (allenai/RLVR-IFeval's func_name, open-instruct's functions): "
        + ", ".join(TULU_FUNCTIONS)
        + ".",
    )
    kwargs: dict[str, Any] = Field(
        default_factory=dict,
        examples=[{"relation": "less than", "num_words": 50}],
        description="IFEval's kwargs for this instruction, or the Tülu function's arguments "
        "(N, quantifier, keyword_list, ...); None values are ignored.",
    )

    @model_validator(mode="after")
    def _kwargs_fit(self) -> Instruction:
        self.kwargs = validate_kwargs(self.id, self.kwargs)
        return self


class InstructionFollowingGrader(_Model):
    """IFEval's verifiable instructions (length, keywords, format, case, language, ...), each
    checked as IFEval does, or Tülu 3's constraints (RLVR-IFeval's `func_name`) as open-instruct
    checks them; the score is the fraction followed (or 1/0 with `aggregate: all`). Also takes an
    IFEval row's own `instruction_id_list` and `kwargs`."""

    type: Literal["instruction_following"] = "instruction_following"
    instructions: list[Instruction] = Field(..., min_length=1, max_length=64)
    mode: Literal["strict", "loose"] = Field(
        "strict",
        description="strict: the response as it is; loose (IFEval's upper bound): also without "
        "its first and/or last line and without `*`.",
    )
    aggregate: Literal["fraction", "all"] = "fraction"

    @model_validator(mode="before")
    @classmethod
    def _ifeval_row(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("instructions"), str | dict):
            # a row's column as it is: Tülu 3's `ground_truth` (JSON text of `{"func_name",
            # ...}`), IFEvalG's, an IFEval row's: read as the trainer adapters read it
            read = instructions_from_value(data["instructions"])
            if not read:
                raise ValueError(
                    "instructions given as text or an object must be a list of {id, kwargs}, "
                    "an IFEval row ({instruction_id_list, kwargs}), Tülu 3's ground truth "
                    '({"func_name", ...}) or IFEvalG\'s, or JSON text of one'
                )
            data = {k: v for k, v in data.items() if k != "instructions"} | read
        if isinstance(data, dict) and "instruction_id_list" in data:
            data = dict(data)
            ids = data.pop("instruction_id_list")
            kwargs = data.pop("kwargs", None)
            if not isinstance(ids, list):
                raise ValueError("instruction_id_list must be a list of instruction ids")
            if kwargs is None:
                kwargs = [{}] * len(ids)
            if not isinstance(kwargs, list):
                raise ValueError("kwargs must be a list (one object per instruction id)")
            if len(kwargs) != len(ids):
                raise ValueError("instruction_id_list and kwargs must have the same length")
            data["instructions"] = [
                {"id": i, "kwargs": k or {}} for i, k in zip(ids, kwargs, strict=True)
            ]
        return data


TextMetric = Literal[
    "fuzzy_match",
    "bleu",
    "gleu",
    "meteor",
    "cosine",
    "rouge_1",
    "rouge_2",
    "rouge_3",
    "rouge_4",
    "rouge_5",
    "rouge_l",
]
_UNAVAILABLE: dict[str, str] = {}  # metrics refused with their reason (none today)


class OpenAITextGrader(_Model):
    """What OpenAI's ``string_check`` and ``text_similarity`` objects share: a reference text,
    and their ``name`` and ``input`` fields (accepted; the input must be the response's
    template)."""

    reference: str = Field(..., max_length=100_000)
    name: str | None = Field(None, max_length=256, description="OpenAI's grader name (unused).")
    input: str | None = Field(None, max_length=256, description=f"OpenAI's {SAMPLE_TEMPLATE!r}.")

    @field_validator("input")
    @classmethod
    def _input_is_the_response(cls, value: str | None) -> str | None:
        return check_openai_input(value)

    @field_validator("reference")
    @classmethod
    def _reference_is_text(cls, value: str) -> str:
        return check_reference_text(value)


class TextSimilarityGrader(OpenAITextGrader):
    """OpenAI's `text_similarity` grader: the response's similarity to the reference
    (fuzzy_match, bleu, gleu, meteor, cosine, rouge_1..rouge_5, rouge_l), in [0, 1]; cosine
    embeds both texts with GloVe 6B 50-d word vectors (mean-pooled), a smaller model than
    OpenAI's. OpenAI's grader object is accepted as it is (`name`,
    `input: "{{sample.output_text}}"`)."""

    type: Literal["text_similarity"] = "text_similarity"
    evaluation_metric: TextMetric = "fuzzy_match"
    pass_threshold: float | None = Field(
        None, ge=0, le=1, description="A similarity at or above this passes (`details.passed`)."
    )
    binary: bool = Field(
        False, description="The reward is the pass (1.0 or 0.0), not the similarity."
    )

    @field_validator("evaluation_metric")
    @classmethod
    def _available(cls, value: str) -> str:
        if value in _UNAVAILABLE:
            raise ValueError(_UNAVAILABLE[value])
        return value

    @model_validator(mode="after")
    def _binary_needs_threshold(self) -> TextSimilarityGrader:
        if self.binary and self.pass_threshold is None:
            raise ValueError("binary needs a pass_threshold")
        return self


_SCHEMA_BYTES = 200_000


class JsonSchemaGrader(_Model):
    """Structured output: 1 when the response holds a JSON value that validates against
    `schema` (a JSON Schema; the draft its `$schema` names, 2020-12 by default), else 0, with the
    first validation errors in the details."""

    type: Literal["json_schema"] = "json_schema"
    json_schema: dict[str, Any] | bool = Field(
        ...,
        alias="schema",
        description="The JSON Schema the response's value must validate against.",
        examples=[{"type": "object", "required": ["name"], "properties": {"name": {}}}],
    )
    extract: Literal["auto", "none"] = Field(
        "auto",
        description="auto: the last fenced block that parses, else the whole response, else the "
        "first JSON object or array in the text; none: the whole response only.",
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    @field_validator("json_schema")
    @classmethod
    def _small_enough(cls, value: dict[str, Any] | bool) -> dict[str, Any] | bool:
        if len(json.dumps(value)) > _SCHEMA_BYTES:
            raise ValueError(f"the schema is over {_SCHEMA_BYTES} bytes of JSON")
        return value
