"""Toolchain bootstrap: pinned versions, the per-version binary cache, and `make setup`'s steps.

This package imports only the standard library so that it runs before the virtual environment exists.
"""
