"""pytest plugin for reporting (filled by the reporting work)."""
