"""dra-conformance: end-to-end conformance and qualification suite for Kubernetes DRA drivers."""

__version__ = "0.1.0"
