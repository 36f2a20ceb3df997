"""The dra-conformance lab: local and kind cluster providers, toolchain builders, offline images."""
