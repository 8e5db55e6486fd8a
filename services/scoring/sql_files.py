"""The SQLite files ``sql`` graders name: ``{"type": "sql", "database": "concert_singer", ...}``.

Text-to-SQL data sets ship their databases as files (Spider's and BIRD's
``database/<db_id>/<db_id>.sqlite``) and name one per row (``db_id``); BIRD's reach gigabytes,
too large to send as ``setup`` SQL with every item. The operator puts them in one folder,
``REFEREE_SQL_DATABASES_DIR``; a grader's ``database`` is a name in it: ``NAME`` itself,
``NAME.sqlite``, ``NAME.db``, ``NAME/NAME.sqlite`` or ``NAME/NAME.db``, the first that is a file.
Each such leaf gets the file's path (``database_path``) before the batch goes to the check pool,
where the file is opened read-only (``verifiers/sql_database.py``). A name with no file, or any
name on a server with no folder, is a 422 that says which item and what to do.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from referee.client.errors import InvalidRequest
from referee.verifiers.tree import has_type, iter_leaves, map_leaves

__all__ = ["database_file", "resolve_sql_databases", "uses_database_files"]

_found: dict[tuple[str, str], str] = {}  # found files only: one added later is still found


def database_file(root: str | Path, name: str) -> str | None:
    """The path of the file ``name`` names under ``root``, or None. A file found before is
    looked for again once it is gone (deleted or replaced by another of the names)."""
    key = (str(root), name)
    known = _found.get(key)
    if known is not None:
        if os.path.isfile(known):
            return known
        del _found[key]
    base = Path(root).resolve()
    for candidate in (
        base / name,
        base / f"{name}.sqlite",
        base / f"{name}.db",
        base / name / f"{name}.sqlite",
        base / name / f"{name}.db",
    ):
        if candidate.is_file() and candidate.resolve().is_relative_to(base):
            _found[key] = str(candidate.resolve())
            return _found[key]
        if candidate.is_file():  # a link out of the folder
            return None
    return None


def uses_database_files(grader: dict[str, Any]) -> bool:
    """Whether the grader has an ``sql`` leaf that names a database file."""
    return any(
        leaf["type"] == "sql" and leaf.get("database") is not None
        for leaf in iter_leaves(grader, inner=True)
    )


def resolve_sql_databases(
    graders: list[dict[str, Any]], root: str | None, where: str = "items"
) -> list[dict[str, Any]]:
    """``graders`` with each ``sql`` leaf that names a ``database`` given its file's path."""

    def resolve(n: int) -> Any:
        def leaf_path(leaf: dict[str, Any], at: str) -> dict[str, Any]:
            name = leaf.get("database") if leaf.get("type") == "sql" else None
            if name is None:
                return leaf
            place = f"{where}.{n}.grader{'.' + at if at else ''}.database"
            if root is None:
                raise InvalidRequest(
                    f"{place}: this server has no SQLite databases folder "
                    "(REFEREE_SQL_DATABASES_DIR): send the database as `setup` SQL, or ask the "
                    "operator to set the folder"
                )
            path = database_file(root, name)
            if path is None:
                raise InvalidRequest(
                    f"{place}: no SQLite file {name!r} in the server's databases folder "
                    f"(looked for {name}, {name}.sqlite, {name}.db, {name}/{name}.sqlite and "
                    f"{name}/{name}.db)"
                )
            return {**leaf, "database_path": path}

        return leaf_path

    out = []
    for n, grader in enumerate(graders):
        if uses_database_files(grader):
            if has_type(grader, {"length_penalty"}):
                # every name is checked here, the inner grader's too; the inner grader keeps its
                # name alone: it is scored in an inner batch of items, which finds the file again
                map_leaves(grader, resolve(n), inner=True)
            grader = map_leaves(grader, resolve(n))
        out.append(grader)
    return out
