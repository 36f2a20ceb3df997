"""Kubernetes access for dra-conformance: client wrapper, builders, waits, tracker, discovery.

Suites reach these through :mod:`conformance.api`; see README.md in this directory.
"""
