"""The `referee` command (``main``; ``python -m referee.services.cli.main``)."""

from referee.services.cli.main import main

__all__ = ["main"]
