"""Test plug-ins: third-party extensions of dra-conformance that live outside conformance/."""
