"""The lab's registries on the loopback: a real OCI registry (CNCF distribution, built from its Go module and
pinned in versions.toml ``[go.registry]``), a classic Helm chart repository (``index.yaml`` over HTTP), and
pushing the lab's cached OCI archives into the registry. The plugin never imports this package."""
