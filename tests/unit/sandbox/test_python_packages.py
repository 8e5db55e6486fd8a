"""Which distributions of the server's environment the sandbox's Python is shown."""

from __future__ import annotations

import os

import pytest

from referee.sandbox.python_packages import (
    PYTHON_PACKAGES_ENV,
    bound_distributions,
    configured_packages,
    distribution_closure,
    site_binds,
)


def test_default_and_configured_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PYTHON_PACKAGES_ENV, raising=False)
    assert configured_packages() == ("pytest", "numpy")
    monkeypatch.setenv(PYTHON_PACKAGES_ENV, " numpy , sympy,")
    assert configured_packages() == ("numpy", "sympy")
    monkeypatch.setenv(PYTHON_PACKAGES_ENV, "")
    assert configured_packages() == ()
    monkeypatch.setenv(PYTHON_PACKAGES_ENV, "numpy;rm -rf /")
    with pytest.raises(ValueError, match="is not a distribution name"):
        configured_packages()


def test_a_distribution_brings_what_it_requires_and_nothing_else() -> None:
    names = {d.metadata["Name"].lower() for d in distribution_closure(["pytest"])}
    assert {"pytest", "pluggy", "iniconfig", "packaging"} <= names
    assert "pytest-timeout" not in names  # installed here, but pytest does not require it
    assert distribution_closure(["no-such-distribution-here"]) == ()


def test_binds_land_in_the_site_dir_from_this_environment() -> None:
    binds = site_binds("/sandbox/site", ["pytest"])
    targets = {t.rsplit("/", 1)[1] for _, t in binds}
    assert {"pytest", "_pytest", "pluggy"} <= targets
    assert all(t.startswith("/sandbox/site/") and os.path.exists(s) for s, t in binds)
    assert not any(t.endswith((".pth", "__pycache__")) for t in targets)
    assert any(d.startswith("pytest==") for d in bound_distributions(binds))
    assert site_binds("/sandbox/site", []) == ()
