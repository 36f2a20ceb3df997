"""Kubernetes access for dra-conformance: client wrapper, builders (parts, edits, kind
catalog, limits), waits, tracker, discovery, inventory (slices -> devices), api_verbs.

Suites reach these through :mod:`conformance.api`; see README.md in this directory.
"""
