"""The trainers' own released code, fetched from PyPI at test time into a cache.

- ``peer_package(name, version)``: ``pip download --no-deps`` of that pinned release, unpacked
  once under ``$REFEREE_PEER_CACHE`` (default ``~/.cache/referee-peers/trainer``).
- ``load_by_path(root, dotted)``: one module of an unpacked release imported from its file, with
  its parent packages as empty namespaces, so a package ``__init__`` that pulls in GPU libraries
  (OpenRLHF's imports deepspeed, ray and vllm) never runs.
- ``stub_modules(...)``: empty stand-ins for heavy imports that are absent here and that the
  loaded code only names at import time (each test says which).
- ``verl_python()``: a virtual environment for veRL 0.9.1's reward path, built once into the
  cache: veRL pins transformers < 5.11 and tensordict <= 0.10.0, while the dev environment has
  TRL's transformers 5.24, so veRL gets its own site-packages and takes from the dev
  environment only what it lacks (torch 2.13.0 CPU; referee, whose module veRL loads) through a
  ``.pth`` line that adds the dev site-packages after its own.
- ``run_script(python, script, spec, folder)``: one of the scripts beside the tests
  (verl_reward_run.py, verl_tool_run.py) in veRL's interpreter, on a JSON spec: what it printed
  last, read as JSON.

A download needs PyPI; where it is unreachable the test fails (these are the point of the tests).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "cache_dir",
    "load_by_path",
    "peer_package",
    "run_script",
    "stub_modules",
    "verl_python",
]

VERL_VERSION = "0.9.1"
# veRL 0.9.1's requirements for its reward path (its METADATA), pinned inside its ranges.
VERL_REQUIREMENTS = [
    "transformers==5.10.4",
    # transformers 5.10.4 reads `kernels` when it is importable; the dev environment's (newer,
    # pulled by its own transformers) changed LayerRepository's arguments: veRL's venv has its own
    "kernels>=0.12.0,<0.13",
    "tensordict==0.10.0",
    "hydra-core==1.3.2",
    "omegaconf==2.3.0",
    "ray==2.55.1",
    "numpy",
    "pandas",
    "pyarrow",
    "requests",
    "aiohttp",
    "pylatexenc",
    "codetiming",
    "dill",
    "packaging",
    "cloudpickle",
    "orjson",
    "pyvers<0.2",
    "importlib_metadata",
]


def cache_dir() -> Path:
    root = os.environ.get("REFEREE_PEER_CACHE") or str(Path.home() / ".cache/referee-peers")
    path = Path(root) / "trainer"
    path.mkdir(parents=True, exist_ok=True)
    return path


def peer_package(name: str, version: str) -> Path:
    """The unpacked wheel of ``name==version`` (its import root), downloaded once."""
    target = cache_dir() / f"{name}-{version}"
    done = target / ".unpacked"
    if done.exists():
        return _import_root(target)
    wheels = target / "wheel"
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
         f"{name}=={version}", "-d", str(wheels)],
        check=True,
        timeout=600,
    )  # fmt: skip
    [wheel] = list(wheels.glob("*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    done.touch()
    return _import_root(target)


def _import_root(target: Path) -> Path:
    """Where the package folders lie: the wheel's root, or its ``*.data/purelib`` (OpenRLHF's
    wheel is a platform wheel whose Python code sits there)."""
    for data in sorted(target.glob("*.data")):
        for lib in ("purelib", "platlib"):
            if (data / lib).is_dir():
                return data / lib
    return target


def _namespace(name: str, path: Path) -> None:
    if name in sys.modules:
        return
    module = ModuleType(name)
    module.__path__ = [str(path)]
    sys.modules[name] = module


def load_by_path(root: Path, dotted: str) -> ModuleType:
    """Import ``dotted`` from ``root`` without running its packages' ``__init__`` files."""
    parts = dotted.split(".")
    for i in range(1, len(parts)):
        _namespace(".".join(parts[:i]), root.joinpath(*parts[:i]))
    file = root.joinpath(*parts).with_suffix(".py")
    spec = importlib.util.spec_from_file_location(dotted, file)
    assert spec is not None and spec.loader is not None, file
    module = importlib.util.module_from_spec(spec)
    sys.modules[dotted] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def stub_modules(**attributes: dict[str, object]) -> Iterator[None]:
    """``stub_modules(ray={"remote": f})``: modules absent here, with the names the loaded code
    reads at import; removed again afterwards (and anything loaded under them)."""
    added = []
    roots = {name.split(".")[0] for name in attributes}
    absent = {r for r in roots if r not in sys.modules and importlib.util.find_spec(r) is None}
    for name, attrs in attributes.items():
        if name.split(".")[0] not in absent:
            continue  # the real one is installed: use it
        module = ModuleType(name)
        for key, value in attrs.items():
            setattr(module, key, value)
        sys.modules[name] = module
        added.append(name)
    try:
        yield
    finally:
        for name in added:
            sys.modules.pop(name, None)


def verl_python() -> Path:
    """The interpreter of the cached veRL 0.9.1 environment (built on first use, minutes)."""
    dev = sysconfig.get_paths()["purelib"]
    # its .pth names this dev environment; a change of the requirements builds a new venv
    tag = hashlib.sha1("\n".join([dev, *VERL_REQUIREMENTS]).encode()).hexdigest()[:8]
    venv = cache_dir() / f"verl-{VERL_VERSION}-venv-{tag}"
    python = venv / "bin" / "python"
    done = venv / ".ready"
    if done.exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=300)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "--no-deps", f"verl=={VERL_VERSION}"], check=True, timeout=900)
    # tensordict's own dependency is torch: borrowed below, so not installed here
    subprocess.run([*pip, "--no-deps", "tensordict==0.10.0"], check=True, timeout=900)
    rest = [r for r in VERL_REQUIREMENTS if not r.startswith("tensordict")]
    subprocess.run([*pip, *rest], check=True, timeout=1800)
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # after its own packages: torch (and only what veRL's venv lacks) from the dev environment
    # the dev environment as a site dir (its .pth files too: referee's editable finder)
    Path(own, "zz_referee_dev_torch.pth").write_text(f"import site; site.addsitedir({dev!r})\n")
    subprocess.run(
        [str(python), "-c", "import torch, tensordict, transformers, verl"],
        check=True,
        timeout=300,
    )
    done.touch()
    return python


def run_script(python: Path, script: Path, spec: dict[str, Any], folder: Path) -> Any:
    """``python script folder/spec.json`` in ``folder`` (the spec written there first, no stdin,
    10 minutes at most), which must succeed: its last line of output, read as JSON."""
    (folder / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [str(python), str(script), str(folder / "spec.json")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
