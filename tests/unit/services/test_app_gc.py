"""The server's collector after start-up (services/app.py ``_settle_gc``): what start-up built is
frozen and collections come after GC_THRESHOLDS new objects, not Python's default 700."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import gc, json
from fastapi.testclient import TestClient
from referee.services.app import GC_THRESHOLDS, create_app
before = gc.get_threshold()
with TestClient(create_app()) as client:
    assert client.get("/readyz").status_code == 200
    print(json.dumps({"before": before, "after": gc.get_threshold(),
                      "want": GC_THRESHOLDS, "frozen": gc.get_freeze_count()}))
"""


@pytest.mark.slow  # about 2 s: starts a server
def test_started_server_freezes_startup_objects_and_collects_less_often() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"][0] == 700  # Python's default, untouched until the app starts
    assert seen["after"] == seen["want"]
    assert seen["want"][0] > seen["before"][0]
    assert seen["frozen"] > 10_000  # modules, models and the app itself
