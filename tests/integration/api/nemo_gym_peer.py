"""NeMo Gym 0.7.0's own code, in a cached virtual environment of its own.

NeMo Gym asks for Python >= 3.13.14 and ray, mlflow, wandb...; its resources-server modules
(``nemo_gym.base_resources_server``, ``server_utils``, ``testing.session_conformance``) run on
3.11 and need only part of that. The released wheel (sha256-pinned) is installed with
``--ignore-requires-python --no-deps`` beside the packages those modules import, pinned, into
``$REFEREE_PEER_CACHE/nemo_gym/`` (a few minutes the first time, then reused).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from pinned_download import pinned_file

VERSION = "0.7.0"
WHEEL = "nemo_gym-0.7.0-py3-none-any.whl"
SHA256 = "cce78fc3fd048f36b4c465fe8e9fe3cc5e7afb6f6e287bfe831f156988508a70"
# what nemo_gym's resources-server modules import (the versions a resolve gave on 2026-12-03)
REQUIREMENTS = [
    "openai==2.44.0", "fastapi==0.165.0", "starlette==1.10.0", "pydantic==2.14.4",
    "httpx==0.29.0", "uvicorn==0.55.0", "httptools==0.9.0", "aiohttp==3.14.5", "anyio==4.16.0",
    "omegaconf==2.3.1", "hydra-core==1.3.8", "orjson==3.13.0", "requests==2.34.2",
    "itsdangerous==2.2.0", "psutil==7.2.2", "rich==15.0.0", "ray==2.60.0", "yappi==1.7.6",
    "pydot==4.0.1", "pandas==3.1.1", "scipy==1.17.1", "wandb==0.31.0",
    # its structured_outputs server's (resources_servers/structured_outputs/requirements.txt)
    "openapi-schema-validator==0.6.3", "xmltodict==1.0.2", "tomli-w==1.2.0", "pyyaml==6.0.3",
]  # fmt: skip


def nemo_gym_python() -> Path:
    """The interpreter of the cached NeMo Gym environment (built on first use)."""
    root = os.environ.get("REFEREE_PEER_CACHE") or str(Path.home() / ".cache/referee-peers")
    tag = hashlib.sha1("\n".join([SHA256, *REQUIREMENTS]).encode()).hexdigest()[:8]
    venv = Path(root) / "nemo_gym" / f"nemo-gym-{VERSION}-venv-{tag}"
    python = venv / "bin" / "python"
    if (venv / ".ready").exists():
        return python
    wheel = pinned_file("nemo-gym", VERSION, WHEEL, SHA256, python_version="3.13.14")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "--no-deps", "--ignore-requires-python", str(wheel)], check=True,
                   timeout=900)  # fmt: skip
    subprocess.run([*pip, *REQUIREMENTS], check=True, timeout=1800)
    check = "import nemo_gym.base_resources_server, nemo_gym.testing.session_conformance"
    subprocess.run([str(python), "-c", check], check=True, timeout=300)
    (venv / ".ready").touch()
    return python
