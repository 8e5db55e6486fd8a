"""The compose healthchecks of the api and the sandbox node give /readyz's check time to answer:
healthcheck.py's HTTP wait is shorter than the healthcheck's own timeout, here and in the image."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)s", text.strip())
    assert match, text
    return float(match.group(1))


def test_compose_and_image_healthchecks_outlast_the_http_wait() -> None:
    script = (ROOT / "docker" / "healthcheck.py").read_text()
    wait = float(re.search(r'"REFEREE_HEALTHCHECK_TIMEOUT_S", "([\d.]+)"', script).group(1))  # type: ignore[union-attr]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for role in ("api", "sandbox"):
        check = compose["services"][role]["healthcheck"]
        assert check["test"][-1] == role
        assert seconds(check["timeout"]) > wait + 1, (role, check)
        assert seconds(check["interval"]) >= seconds(check["timeout"])
    dockerfile = (ROOT / "docker" / "referee.Dockerfile").read_text()
    for timeout in re.findall(r"HEALTHCHECK .*--timeout=(\S+)", dockerfile):
        assert seconds(timeout) > wait + 1, timeout
