"""pytest plugin entry point of dra-conformance (options and fixtures are added by the harness)."""
