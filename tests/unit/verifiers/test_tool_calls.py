"""The ``tool_call`` grader: calls read from OpenAI, Hermes and xLAM shapes; ToolRL's scores."""

from __future__ import annotations

import json
from typing import Any

import pytest

from referee.client.grader_specs import fill_grader, fill_item, tools_from_value
from referee.verifiers.tool_calls import grade_tool_calls, parse_tool_calls, values_equal

WEATHER = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
TIME = {"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}


def openai_message(*calls: dict[str, Any], string_args: bool = True) -> str:
    """An OpenAI chat completion's assistant message, as a trainer would serialise it."""
    return json.dumps(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": json.dumps(c["arguments"]) if string_args else c["arguments"],
                    },
                }
                for i, c in enumerate(calls)
            ],
        }
    )


def hermes(*calls: dict[str, Any], think: bool = True) -> str:
    """Qwen/Hermes chat-template output: <tool_call> blocks after the reasoning."""
    blocks = "\n".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>" for c in calls)
    return ("<think>\nThe user wants the weather.\n</think>\n\n" if think else "") + blocks


# (response, reference, scoring, expected score)
CASES: list[tuple[str, list[dict[str, Any]], str, float]] = [
    (openai_message(WEATHER), [WEATHER], "exact", 1.0),
    (openai_message(WEATHER, string_args=False), [WEATHER], "exact", 1.0),
    (hermes(WEATHER), [WEATHER], "exact", 1.0),
    (hermes(WEATHER, think=False), [WEATHER], "exact", 1.0),
    # parallel calls in another order
    (openai_message(TIME, WEATHER), [WEATHER, TIME], "exact", 1.0),
    (hermes(TIME, WEATHER), [WEATHER, TIME], "exact", 1.0),
    # a JSON object in prose, a fenced block, xLAM's list of calls
    ("Calling it now: " + json.dumps(WEATHER) + " - done.", [WEATHER], "exact", 1.0),
    ("```json\n" + json.dumps([WEATHER, TIME]) + "\n```", [WEATHER, TIME], "exact", 1.0),
    (
        json.dumps([{"name": "get_weather", "parameters": WEATHER["arguments"]}]),
        [WEATHER],
        "exact",
        1.0,
    ),
    # numbers by value, not by spelling
    (
        hermes({"name": "f", "arguments": {"n": 3.0}}),
        [{"name": "f", "arguments": {"n": 3}}],
        "exact",
        1.0,
    ),
    (
        hermes({"name": "f", "arguments": {"n": True}}),
        [{"name": "f", "arguments": {"n": 1}}],
        "exact",
        0.0,
    ),
    (
        hermes({"name": "f", "arguments": {"n": "3"}}),
        [{"name": "f", "arguments": {"n": 3}}],
        "exact",
        0.0,
    ),
    # wrong value, wrong name, missing call, an extra call
    (
        hermes({**WEATHER, "arguments": {"city": "Lyon", "unit": "celsius"}}),
        [WEATHER],
        "exact",
        0.0,
    ),
    (hermes({**WEATHER, "name": "weather"}), [WEATHER], "exact", 0.0),
    (hermes(WEATHER), [WEATHER, TIME], "exact", 0.0),
    (hermes(WEATHER, TIME), [WEATHER], "exact", 0.0),
    ("The weather in Paris is nice.", [WEATHER], "exact", 0.0),
    # ToolRL partial credit: (r_name + r_param + r_value) / S_max, S_max = 1 + |G| + sum |args|
    # one of two calls right: r_name = 1/2, r_param = 1, r_value = 1 -> 2.5 / 6
    (hermes(TIME), [WEATHER, TIME], "partial", 2.5 / 6),
    # right tool, one of two values right: r_name 1, r_param 1, r_value 1 -> 3 / 4
    (
        hermes({**WEATHER, "arguments": {"city": "Paris", "unit": "kelvin"}}),
        [WEATHER],
        "partial",
        3 / 4,
    ),
    # an argument left out: r_param 1/2, r_value 1 -> 2.5 / 4
    (hermes({**WEATHER, "arguments": {"city": "Paris"}}), [WEATHER], "partial", 2.5 / 4),
    # ToolRL's raw reward: R_format (1) + 6 * match / S_max - 3
    (hermes(WEATHER), [WEATHER], "toolrl", 4.0),
    (hermes({**WEATHER, "arguments": {"city": "Paris"}}), [WEATHER], "toolrl", 1 + 6 * 2.5 / 4 - 3),
    ("no call at all", [WEATHER], "toolrl", -3.0),
    # an empty reference: the right answer is not to call a tool
    ("It is sunny.", [], "exact", 1.0),
    (hermes(WEATHER), [], "exact", 0.0),
    ("It is sunny.", [], "toolrl", 1.0),
    (hermes(WEATHER), [], "toolrl", 0.0),
]


@pytest.mark.parametrize(("response", "reference", "scoring", "expected"), CASES)
def test_cases(
    response: str, reference: list[dict[str, Any]], scoring: Any, expected: float
) -> None:
    result = grade_tool_calls(response, reference, scoring=scoring)
    assert result.score == pytest.approx(expected), result


def test_formats_are_reported() -> None:
    assert parse_tool_calls(openai_message(WEATHER))[1] == "openai"
    assert parse_tool_calls(hermes(WEATHER))[1] == "hermes"
    assert parse_tool_calls(json.dumps(WEATHER))[1] == "json"
    assert parse_tool_calls("no call") == ([], None)
    # an unclosed final <tool_call> (generation cut at the stop token) still counts
    assert parse_tool_calls('<tool_call>\n{"name": "f", "arguments": {}}')[0][0].name == "f"


def test_ordered_requires_the_reference_order() -> None:
    response = hermes(TIME, WEATHER)
    assert grade_tool_calls(response, [WEATHER, TIME], ordered=True).score == 0.0
    assert grade_tool_calls(hermes(WEATHER, TIME), [WEATHER, TIME], ordered=True).score == 1.0


def test_defaults_from_tool_definitions() -> None:
    short = hermes({"name": "get_weather", "arguments": {"city": "Paris"}})
    openai_tools = [_weather_tool({"unit": {"type": "string", "default": "celsius"}}, ["city"])]
    # xLAM's tool shape: parameters map straight to {type, description, default}
    xlam_tools = [
        {
            "name": "get_weather",
            "description": "Current weather",
            "parameters": {
                "city": {"type": "str", "description": "City"},
                "unit": {"type": "str", "description": "Unit", "default": "celsius"},
            },
        }
    ]
    assert grade_tool_calls(short, [WEATHER]).score == 0.0
    assert grade_tool_calls(short, [WEATHER], tools=openai_tools).score == 1.0
    assert grade_tool_calls(short, [WEATHER], tools=xlam_tools).score == 1.0
    # a default is not a wildcard: another value still differs
    other = hermes({"name": "get_weather", "arguments": {"city": "Paris", "unit": "kelvin"}})
    assert grade_tool_calls(other, [WEATHER], tools=openai_tools).score == 0.0


def _weather_tool(extra: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """get_weather as an OpenAI tool definition: ``city`` and the ``extra`` parameters."""
    properties = {"city": {"type": "string"}, **extra}
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": "get_weather", "parameters": parameters}}


OPENAI_TOOLS = [
    _weather_tool(
        {
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"},
            "hours": {"type": "array", "items": {"type": "integer"}},
            "weights": {"type": "array", "items": {"type": "number"}},
        },
        ["city", "unit"],
    )
]


@pytest.mark.parametrize(
    ("arguments", "exact", "why"),
    [
        ({"city": "Paris", "unit": "celsius", "days": 3}, 1.0, {}),
        ({"city": "Paris", "unit": "celsius", "days": 3.0}, 0.0, {"days": "type"}),
        ({"city": "Paris", "unit": "celsius", "days": True}, 0.0, {"days": "type"}),
        ({"city": "Paris", "unit": "celsius", "days": "3"}, 0.0, {"days": "type"}),
        ({"city": "Paris", "days": 3}, 0.0, {"unit": "required"}),
        ({"city": "Paris", "unit": "celsius", "days": 3, "zz": 1}, 0.0, {"zz": "declares"}),
    ],
)
def test_calls_are_checked_against_the_tools_declarations(
    arguments: dict[str, Any], exact: float, why: dict[str, str]
) -> None:
    """With ``tools``, a call to a declared tool gives its required parameters, none the tool
    lacks, each of its declared type (an int for ``integer``: not 3.0, not a bool, as BFCL's
    checker does), and the details say which argument broke what."""
    reference = [
        {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 3}}
    ]
    response = hermes({"name": "get_weather", "arguments": arguments})
    result = grade_tool_calls(response, reference, tools=OPENAI_TOOLS)
    assert result.score == exact
    broken = result.matches[0].get("declaration", {})
    assert broken.keys() == why.keys()
    assert all(word in broken[k] for k, word in why.items()), broken
    # without the declarations 3.0 is 3 by value
    if type(arguments.get("days")) is float:
        assert grade_tool_calls(response, reference).score == 1.0


def test_declared_types_in_partial_scores_and_list_items() -> None:
    """A value of another type than declared does not count as equal (partial credit); a list's
    items are checked one level deep against ``items``, an int taken for a float only at the
    top (BFCL's rules)."""
    reference = [
        {
            "name": "get_weather",
            "arguments": {"city": "Paris", "unit": "celsius", "days": 2, "hours": [9, 12]},
        }
    ]
    mistyped = hermes(
        {
            "name": "get_weather",
            "arguments": {"city": "Paris", "unit": "celsius", "days": 2.0, "hours": [9, 12]},
        }
    )
    got = grade_tool_calls(mistyped, reference, scoring="partial", tools=OPENAI_TOOLS)
    assert got.score == pytest.approx((1 + 1 + 3) / (1 + 1 + 4))
    items = hermes(
        {
            "name": "get_weather",
            "arguments": {"city": "Paris", "unit": "celsius", "days": 2, "hours": [9.0, 12]},
        }
    )
    assert grade_tool_calls(items, reference, tools=OPENAI_TOOLS).score == 0.0
    assert grade_tool_calls(items, reference).score == 1.0
    # number items: floats declared, the reference's floats; ints in a list are not floats
    weights = [
        {"name": "get_weather", "arguments": {"city": "P", "unit": "c", "weights": [0.5, 1.0]}}
    ]
    as_floats = hermes(
        {"name": "get_weather", "arguments": {"city": "P", "unit": "c", "weights": [0.5, 1.0]}}
    )
    as_int = hermes(
        {"name": "get_weather", "arguments": {"city": "P", "unit": "c", "weights": [0.5, 1]}}
    )
    assert grade_tool_calls(as_floats, weights, tools=OPENAI_TOOLS).score == 1.0
    assert grade_tool_calls(as_int, weights, tools=OPENAI_TOOLS).score == 0.0


def test_a_reference_value_of_another_type_is_a_variable() -> None:
    """BFCL's "variable" rule: where the reference gives a string for an integer parameter (a
    variable's name), a string is the right type; xLAM's ``int, optional`` is an int."""
    tools = [{"name": "page", "parameters": {"n": {"type": "int, optional"}}}]
    reference = [{"name": "page", "arguments": {"n": "count"}}]
    assert (
        grade_tool_calls(
            hermes({"name": "page", "arguments": {"n": "count"}}), reference, tools=tools
        ).score
        == 1.0
    )
    assert (
        grade_tool_calls(
            hermes({"name": "page", "arguments": {"n": 3}}), reference, tools=tools
        ).score
        == 0.0
    )
    ints = [{"name": "page", "arguments": {"n": 3}}]
    assert (
        grade_tool_calls(hermes({"name": "page", "arguments": {"n": 3}}), ints, tools=tools).score
        == 1.0
    )
    assert (
        grade_tool_calls(hermes({"name": "page", "arguments": {"n": 3.0}}), ints, tools=tools).score
        == 0.0
    )
    # JSON Schema's list of types: any of them
    either = [{"name": "page", "parameters": {"n": {"type": ["integer", "null"]}}}]
    nulls = [{"name": "page", "arguments": {"n": None}}]
    for response, want, score in (
        ({"n": None}, nulls, 1.0),
        ({"n": 3}, ints, 1.0),
        ({"n": 3.0}, ints, 0.0),
    ):
        call = hermes({"name": "page", "arguments": response})
        assert grade_tool_calls(call, want, tools=either).score == score, response
    # a type the table does not know is not checked
    loose = [{"name": "page", "parameters": {"n": {"type": "Optional[Union[int, str]]"}}}]
    assert (
        grade_tool_calls(hermes({"name": "page", "arguments": {"n": 3.0}}), ints, tools=loose).score
        == 1.0
    )


def test_row_tools_fill_the_grader() -> None:
    """A row's ``tools`` column (JSON text, as xLAM's, or a list) or BFCL's ``function`` column
    becomes the grader's ``tools`` when it has none, inside ``weighted`` and
    ``length_penalty`` too; a column that is not tool definitions is left alone."""
    docs = [
        {
            "name": "f",
            "parameters": {
                "type": "dict",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
            },
        }
    ]
    assert fill_item({"type": "tool_call"}, {"function": docs})["tools"] == docs
    assert fill_item({"type": "tool_call"}, {"tools": json.dumps(docs)})["tools"] == docs
    assert fill_item({"type": "tool_call", "tools": []}, {"tools": docs})["tools"] == []
    for junk in ("search, calculator", ["search"], [{"description": "no name"}], "[oops", 7):
        assert "tools" not in fill_item({"type": "tool_call"}, {"tools": junk}), junk
    nested = fill_item(
        {
            "type": "length_penalty",
            "grader": {
                "type": "weighted",
                "graders": [{"weight": 1, "grader": {"type": "tool_call"}}],
            },
        },
        {"function": docs},
    )
    assert nested["grader"]["graders"][0]["grader"]["tools"] == docs
    assert tools_from_value(docs[0]) == docs  # one document on its own


def test_xlam_row_shape() -> None:
    """A row shaped as Salesforce's xlam-function-calling-60k: `tools` and `answers` are JSON
    strings; the grader takes the row's answers as its reference."""
    row = {
        "query": "Where can I find live giveaways for beta access and games?",
        "tools": json.dumps(
            [
                {
                    "name": "live_giveaways_by_type",
                    "description": "Retrieve live giveaways from the GamerPower API.",
                    "parameters": {
                        "type": {
                            "description": "Type of giveaways",
                            "type": "str",
                            "default": "game",
                        }
                    },
                }
            ]
        ),
        "answers": json.dumps(
            [
                {"name": "live_giveaways_by_type", "arguments": {"type": "beta"}},
                {"name": "live_giveaways_by_type", "arguments": {"type": "game"}},
            ]
        ),
    }
    grader = fill_grader({"type": "tool_call", "tools": json.loads(row["tools"])}, row["answers"])
    response = hermes(
        {"name": "live_giveaways_by_type", "arguments": {}},
        {"name": "live_giveaways_by_type", "arguments": {"type": "beta"}},
    )
    result = grade_tool_calls(response, grader["reference"], tools=grader["tools"])
    assert result.score == 1.0, result  # {} takes the default "game"


# BFCL's ground truth for a parallel question: each argument's possible values, "" = optional
BFCL_ROW = {
    "id": "parallel_0",
    "ground_truth": [
        {
            "get_weather": {
                "city": ["San Francisco, CA", "San Francisco"],
                "unit": ["fahrenheit", ""],
            }
        },
        {"get_time": {"timezone": ["America/Los_Angeles", "PST"]}},
    ],
}


@pytest.mark.parametrize(
    ("response", "exact", "partial"),
    [
        ('[get_time(timezone="PST"), get_weather(city="San Francisco")]', 1.0, 1.0),
        (
            '[get_weather(city="san francisco, ca", unit="fahrenheit"), get_time(timezone="pst")]',
            1.0,
            1.0,
        ),
        (
            '[get_weather(city="San Francisco", unit="celsius"), get_time(timezone="PST")]',
            0.0,
            (1 + 2 + 2) / 6,
        ),
        ('[get_weather(unit="fahrenheit"), get_time(timezone="PST")]', 0.0, (1 + 1.5 + 2) / 6),
        ('[get_weather(city="Paris"), get_time(timezone="PST")]', 0.0, (1 + 1 + 2) / 5),
    ],
)
def test_bfcl_possible_answers_as_the_reference(
    response: str, exact: float, partial: float
) -> None:
    """A BFCL ground-truth row in the reference column: any possible value is right, strings
    compared as BFCL's checker does, an argument with "" among its values may be left out (and
    counts like the others when given). Partial: (r_name + Σ(r_param + r_value)) / S_max, where
    S_max = 1 + calls + required arguments + optional arguments given."""
    grader = fill_grader({"type": "tool_call"}, json.dumps(BFCL_ROW["ground_truth"]))
    assert grader["reference"][0] == {
        "name": "get_weather",
        "allowed": BFCL_ROW["ground_truth"][0]["get_weather"],
    }
    assert grade_tool_calls(response, grader["reference"]).score == exact
    got = grade_tool_calls(response, grader["reference"], scoring="partial").score
    assert got == pytest.approx(partial)


def test_bfcl_possible_answers_inside_lists_and_dicts() -> None:
    """A list argument's possible value is compared item by item (strings as BFCL does), a dict
    argument's key by key against each key's possible values ("" marks a key that may be left
    out), as BFCL's checker does."""
    reference = [
        {
            "name": "plan",
            "allowed": {
                "cities": [["Paris", "New York"]],
                "where": [{"lat": [48.85], "unit": ["deg", ""]}],
            },
        }
    ]
    ok = '[plan(cities=["paris", "new york"], where={"lat": 48.85})]'
    assert grade_tool_calls(ok, reference).score == 1.0
    for wrong in (
        '[plan(cities=["Paris"], where={"lat": 48.85})]',
        '[plan(cities=["Paris", "New York"], where={"lat": 2.35})]',
        '[plan(cities=["Paris", "New York"], where={"lat": 48.85, "alt": 35})]',
        '[plan(cities=["Paris", "New York"], where={"unit": "deg"})]',
    ):
        assert grade_tool_calls(wrong, reference).score == 0.0, wrong


def test_values_equal() -> None:
    assert values_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not values_equal([1, 2], [2, 1])
    assert not values_equal(0, False)
    assert not values_equal(None, 0)
    assert values_equal(None, None)


PYTHONIC = '[get_weather(city="Paris", unit="celsius"), get_time(timezone="Europe/Paris")]'
SWAPPED = '[get_time(timezone="Europe/Paris"), get_weather(unit="celsius", city="Paris")]'


@pytest.mark.parametrize(
    "response",
    [PYTHONIC, f"<|python_start|>{SWAPPED}<|python_end|>", f"```python\n{PYTHONIC}\n```"],
)
def test_python_call_syntax_is_read_without_running_it(response: str) -> None:
    """BFCL's answers and Llama's "pythonic" tool calls: a list of calls with keyword
    arguments, read with ast (never run), in a Llama tag or a fenced block."""
    calls, source = parse_tool_calls(response)
    assert source == "pythonic"
    assert {c.name for c in calls} == {"get_weather", "get_time"}
    assert grade_tool_calls(response, [WEATHER, TIME]).score == 1.0


def test_python_call_syntax_takes_literals_only() -> None:
    one = 'book(seats=2, window=True, meal=None, legs=("CDG", "JFK"), extra={"bags": 1.5})'
    ((call,), _) = parse_tool_calls(one)
    assert call.arguments == {
        "seats": 2,
        "window": True,
        "meal": None,
        "legs": ["CDG", "JFK"],
        "extra": {"bags": 1.5},
    }
    for refused in (
        "[f(1)]",  # a positional argument has no name to compare
        "[f(a=g())]",
        "[f(a=1 + 2)]",
        "[f(**options)]",
        '[__import__("os").system(command="ls")]',
        "[f(a={1, 2})]",
        "[f(a=" + "9" * 5000 + ")]",  # past Python's digit limit for int()
        "(" * 500 + "f(a=1)" + ")" * 500,
        "I would call get_weather(city='Paris') here",  # prose, not a call
    ):
        assert parse_tool_calls(refused) == ([], None), refused


def test_hostile_response_is_bounded() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert grade_tool_calls(deep, [WEATHER]).outcome == "no_call"
    many = hermes(*([WEATHER] * 500))
    result = grade_tool_calls(many, [WEATHER], scoring="partial")
    assert len(result.calls) == 64 and result.score < 1.0
    braces = "{" * 50_000
    assert grade_tool_calls(braces, [WEATHER]).outcome == "no_call"
    # unclosed objects, each read far before it fails: the scan's budget stops the search
    unclosed = "".join('{"x": [' + "1," * 5000 for _ in range(400))
    assert grade_tool_calls(unclosed, [WEATHER]).outcome == "no_call"


def test_registered_tool_call_grader_takes_each_items_calls() -> None:
    from referee.services.scoring.named import GraderRegistry

    registry = GraderRegistry({"calls": {"type": "tool_call", "scoring": "partial"}})
    expanded = registry.expand({"type": "named", "name": "calls", "reference": json.dumps([TIME])})
    assert expanded["reference"] == [TIME]
    with pytest.raises(ValueError, match="scoring"):
        GraderRegistry({"bad": {"type": "tool_call", "scoring": "nope"}})


def test_a_grader_takes_a_rows_columns_as_they_are() -> None:
    """The grader itself, through `/v1/rewards`, takes the reference and the tools in the forms
    datasets keep them: xLAM's JSON strings, BFCL's ground truth, ToolRL's `<tool_call>`
    blocks, one call object; text that is none of them is a 422 that says what it must be."""
    from fastapi.testclient import TestClient

    from referee.services.app import create_app

    tools = [
        {
            "name": "live_giveaways_by_type",
            "description": "Retrieve live giveaways from the GamerPower API.",
            "parameters": {"type": {"description": "Type", "type": "str", "default": "game"}},
        }
    ]
    beta = {"name": "live_giveaways_by_type", "arguments": {"type": "beta"}}
    right = hermes(beta)
    wrong = hermes({"name": "live_giveaways_by_type", "arguments": {"type": "dlc"}})
    defaulted = hermes({"name": "live_giveaways_by_type", "arguments": {}})
    game = {"name": "live_giveaways_by_type", "arguments": {"type": "game"}}
    graders = {
        "xlam strings": {"reference": json.dumps([beta]), "tools": json.dumps(tools)},
        "one call object": {"reference": beta},
        "bfcl ground truth": {"reference": [{"live_giveaways_by_type": {"type": ["beta", "b"]}}]},
        "toolrl blocks": {
            "reference": '<think>beta</think>\n<tool_call>\n{"name": "live_giveaways_by_type", '
            '"parameters": {"type": "beta"}}\n</tool_call>'
        },
    }
    items = [
        {"id": f"{name}/{which}", "response": text, "grader": {"type": "tool_call", **g}}
        for name, g in graders.items()
        for which, text in (("right", right), ("wrong", wrong))
    ]
    # the declared default fills an argument left out: only the tools' text made that known
    items.append(
        {
            "id": "xlam default",
            "response": defaulted,
            "grader": {"type": "tool_call", "reference": [game], "tools": json.dumps(tools)},
        }
    )
    with TestClient(create_app()) as client:
        r = client.post("/v1/rewards", json={"items": items})
        assert r.status_code == 200, r.text
        scores = {x["id"]: x["score"] for x in r.json()["rewards"]}
        assert scores == {
            **{f"{name}/right": 1.0 for name in graders},
            **{f"{name}/wrong": 0.0 for name in graders},
            "xlam default": 1.0,
        }
        for bad, field in (
            ({"reference": "get the weather"}, "reference"),
            ({"reference": [beta], "tools": "none"}, "tools"),
        ):
            r = client.post(
                "/v1/rewards",
                json={
                    "items": [
                        {"id": "x", "response": right, "grader": {"type": "tool_call", **bad}}
                    ]
                },
            )
            assert r.status_code == 422, r.text
            assert field in r.text and "must be" in r.text, r.text


def test_llama_31_custom_tool_calls() -> None:
    """Llama 3.1's format for tools defined in the system prompt (Meta's prompt-format
    documentation): ``<function=NAME>{JSON arguments}</function>``, no ``<tool_call>`` around
    it; a body that is not a JSON object is no call, and a flood of tags is read in linear
    time."""
    songs = {"name": "spotify_trending_songs", "arguments": {"n": "5"}}
    calls, fmt = parse_tool_calls('<function=spotify_trending_songs>{"n": "5"}</function>')
    assert fmt == "llama3_function" and [(c.name, c.arguments) for c in calls] == [
        ("spotify_trending_songs", {"n": "5"})
    ]
    two = (
        'Calling both.\n<function=spotify_trending_songs>{"n": "5"}</function>\n'
        '<function=get_weather>{"city": "Paris"}</function><|eom_id|>'
    )
    weather = {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert grade_tool_calls(two, [weather, songs]).score == 1.0
    assert grade_tool_calls(two, [songs]).score == 0.0  # one call too many
    assert parse_tool_calls("<function=f>not json</function>") == ([], None)
    assert parse_tool_calls('<function=bad name>{"a": 1}</function>') == ([], None)
    assert parse_tool_calls("<function=f>[1, 2]</function>") == ([], None)
    # Qwen3-Coder's parameters without the <tool_call> around them
    qwen = "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>"
    assert grade_tool_calls(qwen, [weather]).score == 1.0
    flood = "<function=" * 200_000 + "f>{}"
    assert parse_tool_calls(flood)[0] == []


def test_extra_arguments_ignored_compares_only_the_reference_ones() -> None:
    """``extra_arguments="ignored"`` (NeMo Gym's xlam_fc): an argument the reference does not
    give is not compared; the reference's own must still be there and equal."""
    ref = [{"name": "get_weather", "arguments": {"city": "Paris"}}]

    def block(arguments: dict[str, Any]) -> str:
        return (
            f"<tool_call>{json.dumps({'name': 'get_weather', 'arguments': arguments})}</tool_call>"
        )

    more = block({"city": "Paris", "unit": "celsius"})
    assert grade_tool_calls(more, ref).score == 0.0
    assert grade_tool_calls(more, ref, extra_arguments="ignored").score == 1.0
    for wrong in ({"unit": "celsius"}, {"city": "Lyon", "unit": "celsius"}):
        assert grade_tool_calls(block(wrong), ref, extra_arguments="ignored").score == 0.0
    two = more + block({"city": "Paris"})  # a call more is still wrong
    assert grade_tool_calls(two, ref, extra_arguments="ignored").score == 0.0
