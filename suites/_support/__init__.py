"""Suite-side helpers that the harness does not offer yet (issue 6). Each module has one job and is meant to
move into conformance/ (k8s/, node/ or plugin.py) once the harness owner takes it over; suites import them as
``from suites._support import ...``. No test logic lives here."""
