"""Hook specifications added by the reporting plugin (design.md §9: extension points are hookspecs).

The harness (or a driver-specific conftest) implements :func:`pytest_dra_collect_evidence`; the reporting
plugin calls it once for each failing test phase and attaches what comes back to the Allure result and to
``<report_dir>/evidence/<test-id>/``.
"""

from __future__ import annotations

import pytest


@pytest.hookspec
def pytest_dra_collect_evidence(item, call):
    """Collect diagnostics for a failing test, before its objects are deleted.

    ``item``: the failing ``pytest.Item``; ``call``: the ``pytest.CallInfo`` of the failing phase
    (``call.when`` is ``setup``, ``call`` or ``teardown``; ``call.excinfo`` holds the error).

    Return a list of ``(name, content, mime)`` tuples: ``name`` a short file-like name
    (``"claim ns-a/claim-0.yaml"``), ``content`` ``str`` (UTF-8 text) or ``bytes``, ``mime`` a MIME type
    (``text/plain``, ``application/yaml``, ``application/json``, ``image/png``...). Return ``None`` or ``[]``
    when there is nothing. Every implementation is called; an implementation that raises is reported as an
    evidence piece named ``evidence-error <plugin>`` instead of hiding the test's own failure.

    Source: reporting.md §4.5 (evidence collected on failure); NVIDIA bats ``on_failure`` hook.
    """
