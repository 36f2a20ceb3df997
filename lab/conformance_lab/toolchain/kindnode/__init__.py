"""The offline kind node image (`dra-conformance kind build-node-image`, `make kind-node-image`)."""
