"""Where the shipped suites and driver profiles are, in a checkout and in an installed wheel.

In this repository's checkout they live at ``suites/`` and ``fixtures/drivers/``; the wheel carries them as
package data, ``conformance/suites/`` and ``conformance/profiles/`` (build_hooks.py copies them at build time),
so ``pytest --pyargs conformance.suites`` and ``dra-conformance run`` work from any directory.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SOURCE_ROOT = PACKAGE.parent  # the checkout, or site-packages


def in_checkout() -> bool:
    """True when running from the repository (its ``pyproject.toml`` and ``suites/`` beside the package)."""
    return (SOURCE_ROOT / "pyproject.toml").is_file() and (SOURCE_ROOT / "suites").is_dir()


def suites_dir() -> Path:
    """The suites package directory (``suites/`` in a checkout, ``conformance/suites`` installed)."""
    return SOURCE_ROOT / "suites" if in_checkout() else PACKAGE / "suites"


def test_root() -> Path:
    """The directory pytest takes as rootdir: the one holding the suites package's top level."""
    return suites_dir().parent if in_checkout() else SOURCE_ROOT


def profiles_dir() -> Path:
    """The shipped driver profiles (``fixtures/drivers`` in a checkout, ``conformance/profiles`` installed)."""
    return SOURCE_ROOT / "fixtures" / "drivers" if in_checkout() else PACKAGE / "profiles"


def resolve_path(text: str, profile_source: str | None = None) -> Path | None:
    """A relative path a profile names (a chart or manifests directory, a devices file), looked up beside the
    profile file, then in the current directory, then under :data:`SOURCE_ROOT` (where ``reference_driver/``
    is, in a checkout and installed alike); an absolute path is itself. None when it exists nowhere."""
    path = Path(text)
    if path.is_absolute():
        return path if path.exists() else None
    bases = ([Path(profile_source).parent] if profile_source else []) + [Path.cwd(), SOURCE_ROOT]
    return next((base / path for base in bases if (base / path).exists()), None)
