"""Allure labels, links and parameters of one test, from its markers and the run's environment.

Mapping (conformance/core/markers.py is the vocabulary): area marker -> ``epic``; ``requires(*caps)`` ->
one ``feature`` per capability; ``scenario(*ids)`` -> ``story``; profile marker -> ``tag`` and severity
(core -> critical, standard -> normal, full/disruptive -> minor); ``kep(n)`` -> link to the KEP issue.
The Kubernetes version and driver become *parameters*, so matrix runs of one test are distinct results
(historyId = md5(fullName + parameters), allure-pytest ``utils.get_history_id``) rather than retries.

Source: reporting.md §2.1 (allure-pytest history identity, suggested mapping).
"""

from __future__ import annotations

import dataclasses

from conformance.core import markers
from conformance.reporting import runinfo

KEP_URL = "https://github.com/kubernetes/enhancements/issues/{}"
SEVERITY = {"core": "critical", "standard": "normal", "full": "minor", "disruptive": "minor"}
AREA_NAMES = {m.name for m in markers.AREAS}
PROFILE_NAMES = {m.name for m in markers.PROFILES}
NO_CAPABILITY = "baseline"


@dataclasses.dataclass(frozen=True)
class TestLabels:
    """What the reporting plugin attaches to one test.

    ``labels``: ``(label_type, value)`` pairs; ``links``: ``(url, name)`` pairs; ``parameters``:
    ``(name, value)`` pairs that are part of the result's identity.
    """

    labels: tuple[tuple[str, str], ...]
    links: tuple[tuple[str, str], ...]
    parameters: tuple[tuple[str, str], ...]


def marker_args(marks, name: str) -> list[str]:
    """All positional arguments of the marks called ``name`` (``marks``: objects with ``.name``/``.args``)."""
    return [str(a) for m in marks if m.name == name for a in m.args]


def for_test(marks, run: dict) -> TestLabels:
    """Labels, links and parameters for a test carrying ``marks`` (pytest ``Mark`` objects) in ``run``.

    ``run``: the parsed run.json (may be empty).
    """
    names = [m.name for m in marks]
    areas = sorted({n for n in names if n in AREA_NAMES})
    profiles = [n for n in markers.PROFILE_ORDER if n in names]
    capabilities = sorted(set(marker_args(marks, "requires"))) or [NO_CAPABILITY]
    labels: list[tuple[str, str]] = [("epic", a) for a in areas]
    labels += [("feature", c) for c in capabilities]
    labels += [("story", s) for s in marker_args(marks, "scenario")]
    if profiles:
        labels.append(("severity", SEVERITY[profiles[0]]))
        labels.append(("profile", profiles[0]))
    version, driver = runinfo.k8s_minor(run), runinfo.driver_name(run)
    labels += [
        ("tag", f"k8s-{version}"),
        ("tag", f"driver:{driver}"),
        ("tag", f"run-profile:{runinfo.profile(run)}"),
        ("tag", f"gates:{runinfo.gates_mode(run)}"),
        ("k8s", version),
        ("driver", driver),
        ("driver_version", runinfo.driver_version(run)),
        ("parentSuite", f"Kubernetes {version}"),
    ]
    if areas:
        labels.append(("suite", areas[0]))
    links = [(KEP_URL.format(n), f"KEP-{n}") for n in marker_args(marks, "kep")]
    parameters = (("Kubernetes", version), ("driver", driver))
    return TestLabels(tuple(labels), tuple(links), parameters)
