"""dra-conformance tools: bench, validate-suite, the version-matrix runner."""
