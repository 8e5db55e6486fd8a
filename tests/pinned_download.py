"""A peer's released file from PyPI, pinned by version and sha256, downloaded once into a cache.

    pinned_file("lm-eval", "0.4.13", "lm_eval-0.4.13-py3-none-any.whl", "5daa...")

The cache is ``~/.cache/referee-tests/`` (``REFEREE_TEST_CACHE`` overrides). A file already there
with the pinned sha256 is used as it is; otherwise pip downloads it (``--no-deps``; a wheel, or the
sdist with ``sdist=True``) and it must have that sha256. Without PyPI the download fails with the
command and pip's message: the tests that need a peer's own code fail, they do not skip.

Test modules import it (``tests/`` is on the path of a test run); the modules that benchmarks
load from their files load it by path too.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["cache_dir", "pinned_file"]


def cache_dir() -> Path:
    base = os.environ.get("REFEREE_TEST_CACHE") or Path.home() / ".cache" / "referee-tests"
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pinned_file(
    project: str,
    version: str,
    filename: str,
    sha256: str,
    *,
    sdist: bool = False,
    python_version: str | None = None,
) -> Path:
    """``filename`` of ``project==version`` in the cache, downloaded when missing or altered."""
    target = cache_dir() / filename
    if target.exists() and _sha256(target) == sha256:
        return target
    kind = ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    if python_version:  # a wheel whose Requires-Python this interpreter does not meet
        kind += ["--python-version", python_version]
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", *kind,
               "--disable-pip-version-check", "-q", f"{project}=={version}", "-d", tmp]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        got = Path(tmp) / filename
        if done.returncode != 0 or not got.exists():
            what = "sdist" if sdist else "wheel"
            raise RuntimeError(
                f"could not download the {project} {version} {what} from PyPI "
                f"({' '.join(cmd)}): {done.stderr.strip()[-800:]}"
            )
        if _sha256(got) != sha256:
            raise RuntimeError(f"{filename} from PyPI does not have the pinned sha256")
        os.replace(got, target)
    return target
