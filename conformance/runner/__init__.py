"""Running the suites: the session orchestration (cluster -> driver -> capabilities) and the CLI."""
