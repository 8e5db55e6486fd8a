"""``import referee.client`` must not pull in the server's or the models' dependencies."""

from __future__ import annotations

import json
import subprocess
import sys


def test_client_imports_only_pydantic_and_httpx() -> None:
    code = (
        "import sys, json, referee.client; "
        "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    for heavy in (
        "fastapi",
        "starlette",
        "sympy",
        "torch",
        "latex2sympy2_extended",
        "uvicorn",
        "prometheus_client",
        "celery",
    ):
        assert heavy not in loaded, heavy
    assert "referee" in loaded and "httpx" in loaded
