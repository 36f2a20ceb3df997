"""Cluster providers: one Protocol in :mod:`conformance.clusters.base` and one package per implementation
(``local``: a real Kubernetes cluster run as host processes)."""
