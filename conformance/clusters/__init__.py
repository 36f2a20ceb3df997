"""Cluster providers: one module or package per implementation (``local``: a real Kubernetes cluster run as
host processes; ``existing``; ``kind``), registered by name in :mod:`conformance.clusters.builtin`. The
Protocols they implement live in :mod:`conformance.core.handles`."""
