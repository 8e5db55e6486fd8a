"""Print the requirements of some of referee's extras, read from pyproject.toml, one a line.

    python3 docker/requirements.py pyproject.toml server genrm > requirements.txt

The images install dependencies from this list before the source is copied in, so a change to
the code does not re-install them (Docker's layer cache). ``referee[...]`` self-references are
followed. Python 3.11+ (tomllib); no third-party module.
"""

from __future__ import annotations

import sys
import tomllib


def requirements(pyproject: str, extras: list[str]) -> list[str]:
    with open(pyproject, "rb") as fh:
        project = tomllib.load(fh)["project"]
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    out: list[str] = list(project.get("dependencies", []))
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        seen.add(extra)
        if extra not in optional:
            raise SystemExit(f"requirements.py: no extra {extra!r} in {pyproject}")
        for req in optional[extra]:
            name = req.split("[", 1)[0].strip()
            if name == project["name"]:
                todo += req.split("[", 1)[1].rstrip("]").split(",")
            elif req not in out:
                out.append(req)
    return out


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1], sys.argv[2:])))
