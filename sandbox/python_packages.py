"""Which of the server's installed Python distributions a sandboxed Python program sees.

The sandbox's Python is the server's base interpreter with its own site-packages shown empty,
so without binds a program has the standard library only. Test code of the field does not: KodCode's
test files use ``pytest.raises`` and ``pytest.mark.parametrize``, AceCode's and TACO's programs
import numpy. ``REFEREE_SANDBOX_PYTHON_PACKAGES`` (comma-separated distribution names; default
``pytest,numpy``; empty for none) names the distributions a program may import: each one and the
distributions it requires (their markers evaluated for this interpreter, extras left out) are
bound read-only, file for file as their wheels installed them (packages, single-module files,
vendored ``<name>.libs`` and ``.dist-info``), into the empty site-packages, which ``python -I``
puts on ``sys.path`` as usual. Nothing else of the server's environment is shown (``import
fastapi`` fails), and the binds are read-only: a program cannot change a package for the next.

Names that are not installed are left out. ``GET /v1/sandbox`` lists what is bound.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import os
import re
from collections.abc import Iterable

__all__ = [
    "DEFAULT_PYTHON_PACKAGES",
    "PYTHON_PACKAGES_ENV",
    "bound_distributions",
    "configured_packages",
    "distribution_closure",
    "package_entries",
    "site_binds",
]

PYTHON_PACKAGES_ENV = "REFEREE_SANDBOX_PYTHON_PACKAGES"
DEFAULT_PYTHON_PACKAGES = ("pytest", "numpy")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SKIP_TOP = {"..", "__pycache__", ""}


def configured_packages() -> tuple[str, ...]:
    """The distribution names ``REFEREE_SANDBOX_PYTHON_PACKAGES`` asks for (the default when
    unset); a name that is not a distribution name is a ``ValueError`` that says which."""
    raw = os.environ.get(PYTHON_PACKAGES_ENV)
    if raw is None:
        return DEFAULT_PYTHON_PACKAGES
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    for name in names:
        if not _NAME.match(name):
            raise ValueError(
                f"{PYTHON_PACKAGES_ENV}: {name!r} is not a distribution name "
                "(letters, digits, '.', '_' and '-')"
            )
    return names


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    """The distributions ``dist`` requires here: markers evaluated, extras' requirements out."""
    try:
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:  # no packaging: only the unconditional requirements, read by name
        return [
            re.split(r"[\s;\[<>=!~(]", r, maxsplit=1)[0]
            for r in dist.requires or ()
            if ";" not in r
        ]
    names = []
    for text in dist.requires or ():
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            names.append(req.name)
    return names


def distribution_closure(names: Iterable[str]) -> tuple[metadata.Distribution, ...]:
    """The installed distributions ``names`` and all they require, each once, in a stable
    order; names not installed are left out."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = todo.pop(0)
        key = _canonical(name)
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = dist
        todo.extend(_requirement_names(dist))
    return tuple(seen.values())


def package_entries(dist: metadata.Distribution) -> tuple[str, ...]:
    """The host paths of the top-level entries ``dist`` installed into its site-packages (its
    packages, module files, ``.libs`` and ``.dist-info``), not its scripts outside it."""
    entries: dict[str, None] = {}
    for file in dist.files or ():
        top = file.parts[0] if file.parts else ""
        if top in _SKIP_TOP or top.endswith(".pth"):
            continue
        path = os.path.realpath(str(dist.locate_file(top)))
        if os.path.exists(path):
            entries[path] = None
    return tuple(entries)


@functools.cache
def _binds_for(names: tuple[str, ...], site_dir: str) -> tuple[tuple[str, str], ...]:
    binds: dict[str, str] = {}
    for dist in distribution_closure(names):
        for path in package_entries(dist):
            target = f"{site_dir}/{os.path.basename(path)}"
            binds.setdefault(target, path)
    return tuple((source, target) for target, source in binds.items())


def site_binds(site_dir: str, names: Iterable[str] | None = None) -> tuple[tuple[str, str], ...]:
    """``(host path, sandbox path)`` read-only binds that show the distributions ``names``
    (default: :func:`configured_packages`) and what they require inside ``site_dir``."""
    chosen = configured_packages() if names is None else tuple(names)
    return _binds_for(chosen, site_dir)


def bound_distributions(binds: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The ``name==version`` of each distribution whose ``.dist-info`` ``binds`` show."""
    found = []
    for _source, target in binds:
        base = os.path.basename(target)
        if base.endswith(".dist-info"):
            name, _, version = base.removesuffix(".dist-info").partition("-")
            found.append(f"{name}=={version}")
    return tuple(sorted(found))
