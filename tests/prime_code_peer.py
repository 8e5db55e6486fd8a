"""veRL's ``prime_code`` reward (APPS's ``testing_util``), from the pinned verl wheel.

``verl/utils/reward_score/prime_code`` (``__init__``, ``utils``, ``testing_util``) is what veRL's
default reward runs for the ``codecontests``, ``apps``, ``codeforces`` and ``taco`` data sources
without a sandbox: the solution run in a child process, each stdin test's output compared as
APPS's ``testing_util`` compares it. The three files are taken from the wheel (tests/toolrl_peer.py
pins it) into the tests' cache as a package of their own, without veRL's ``__init__`` (torch,
ray); they need numpy, which the venv has.
"""

from __future__ import annotations

import importlib
import sys
import zipfile
from typing import Any

from pinned_download import cache_dir, pinned_file
from toolrl_peer import VERSION, WHEEL, WHEEL_SHA256

_FILES = ("__init__.py", "utils.py", "testing_util.py")


def prime_code() -> Any:
    """The ``prime_code`` package: ``compute_score(completion, test_cases, continuous=False)``."""
    root = cache_dir() / f"verl-{VERSION}-prime_code"
    package = root / "verl_prime_code"
    if not all((package / name).exists() for name in _FILES):
        package.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(pinned_file("verl", VERSION, WHEEL, WHEEL_SHA256)) as wheel:
            for name in _FILES:
                source = wheel.read(f"verl/utils/reward_score/prime_code/{name}")
                (package / name).write_bytes(source)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return importlib.import_module("verl_prime_code")
