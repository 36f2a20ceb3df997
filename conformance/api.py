"""The one public module suites import (design.md §2): builders' parts, waits, timeouts, errors.

    from conformance.api import waits, timeouts, request, first_available, match_attribute, opaque_config

Fixtures (``k8s``, ``namespace``, ``builder``, ``tracker``, ``driver``, ``profile``, ``capabilities``,
``node_access``, ``run_config``, ``cluster``) come from the ``dra_conformance`` pytest plugin by name.
See conformance/k8s/README.md for the cheat sheet.
"""
from conformance.core import errors, timeouts
from conformance.core.errors import ApiError, Conflict, Invalid, LeakError, NotFound, WaitFailed, WaitTimeout
from conformance.k8s import waits
from conformance.k8s.builders import (Version, container, device, distinct_attribute, first_available,
                                      match_attribute, opaque_config, request, subrequest, toleration)
from conformance.k8s.objects import Obj

__all__ = ["ApiError", "Conflict", "Invalid", "LeakError", "NotFound", "Obj", "Version", "WaitFailed", "WaitTimeout",
           "container", "device", "distinct_attribute", "errors", "first_available", "match_attribute",
           "opaque_config", "request", "subrequest", "timeouts", "toleration", "waits"]
