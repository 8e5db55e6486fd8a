"""What the drivers that run NeMo Gym's own resources servers beside referee share (they run
inside NeMo Gym 0.7.0's environment, nemo_gym_peer.nemo_gym_python): a server's ``app.py`` from
the installed wheel, the Responses API items the cases are made of, and the loop that scores
each case with the peer server and with referee's ``/nemo-gym/python/verify``."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import resources_servers


def server_folder(name: str) -> Path:
    """``resources_servers/<name>`` of the wheel (a namespace package: no ``__file__``)."""
    return Path(next(iter(resources_servers.__path__))) / name


def load_app(name: str) -> ModuleType:
    """The server's ``app.py``, loaded by path (its own modules beside it importable)."""
    folder = server_folder(name)
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"{name}_app", folder / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp", "created_at": 0.0, "model": "policy", "object": "response",
        "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }  # fmt: skip


def said(text: str) -> dict[str, Any]:
    return {
        "id": "msg", "type": "message", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }  # fmt: skip


def call(name: str, arguments: Any, k: int = 0) -> dict[str, Any]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "call_id": f"call_{k}", "name": name, "arguments": text}


async def score_both(
    url: str, server: Any, request_model: Any, cases: list[tuple[str, dict[str, Any]]]
) -> list[list[Any]]:
    """``[case, the peer's reward, referee's status, referee's reward]`` for each case, the
    request validated by the peer's own model first."""
    results = []
    with httpx.Client(base_url=f"{url}/nemo-gym/python", timeout=120) as client:
        for case, body in cases:
            request = request_model.model_validate(body)
            theirs = (await server.verify(request)).reward
            r = client.post("/verify", json=request.model_dump(mode="json"))
            ours = r.json().get("reward") if r.status_code == 200 else r.text
            results.append([case, theirs, r.status_code, ours])
    return results
