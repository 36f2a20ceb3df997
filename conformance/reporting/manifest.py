"""The shipped manifest of each profile's tests (breaker finding 12: narrowing is not counted against itself).

``suites/profile-tests.json`` lists, per profile (:data:`conformance.core.markers.PROFILE_ORDER`), the node IDs
of the tests ``--profile P`` selects (the harness's own deselection, :func:`conformance.core.selection.decide`).
It is generated like a lockfile (``make profile-manifest``, i.e. ``python -m conformance.reporting.manifest
--write``) and checked by a unit test (``--check``: a fresh collection must equal it). A run whose results
lack IDs of its profile's manifest is narrowed (:func:`missing`, read by conformance/reporting/summary.py):
a plugin, a conftest or ``collect_ignore`` that drops tests before the narrowing recorder counts them
(conformance/runner/narrowing.py) can no longer turn a partial run into a PASS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from conformance import shipped
from conformance.core import markers, selection

PATH = shipped.suites_dir() / "profile-tests.json"
ENV = "DRA_CONFORMANCE_MANIFEST_OUT"  # where the collecting child writes {profile: [ids]}
PLUGIN = "conformance.reporting.manifest"  # this module, loaded by the collecting child
REGENERATE = "make profile-manifest (python -m conformance.reporting.manifest --write)"


def key(nodeid: str) -> str:
    """A node ID relative to the suites folder (``node/test_kep5970.py::test_x``), whatever the rootdir
    (``suites/...`` from a checkout, ``conformance/suites/...`` from an installed package)."""
    path, sep, rest = nodeid.partition("::")
    return path.split("suites/", 1)[-1] + sep + rest


def load(path: Path = PATH) -> dict[str, list[str]]:
    """``{profile: [node IDs relative to suites/]}`` of the shipped manifest; ``{}`` when there is none."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def missing(profile: str, nodeids: Iterable[str], manifest: dict[str, list[str]] | None = None) -> list[str]:
    """The manifest IDs of ``profile`` that are not among ``nodeids`` (the results' node IDs), sorted. Empty
    when the manifest has no such profile or no result is a shipped test at all (a run of another suite,
    e.g. the harness's own sample suites)."""
    wanted = set((load() if manifest is None else manifest).get(profile) or [])
    seen = {key(n) for n in nodeids}
    if not wanted or not wanted & seen:
        return []
    return sorted(wanted - seen)


def pytest_collection_finish(session) -> None:
    """pytest hook of the collecting child (``-p conformance.reporting.manifest``): write ``{profile: [ids]}``
    for the collected items (collected with ``--profile disruptive``: nothing deselected) to ``$ENV``."""
    out: dict[str, list[str]] = {p: [] for p in markers.PROFILE_ORDER}
    for item in session.items:
        names = [m.name for m in item.iter_markers()]
        for profile in markers.PROFILE_ORDER:
            if selection.decide(names, [], profile, None).action != "deselect":
                out[profile].append(key(item.nodeid))
    Path(os.environ[ENV]).write_text(json.dumps({p: sorted(ids) for p, ids in out.items()}), encoding="utf-8")


def generate(suites: Path | None = None) -> dict[str, list[str]]:
    """Collect the shipped suites (a child pytest, no cluster) and return the manifest. Raises RuntimeError
    with the child's output when the collection fails."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "manifest.json"
        args = [sys.executable, "-m", "pytest", str(suites or shipped.suites_dir()), "--collect-only", "-q"]
        args += ["--rootdir", str(shipped.test_root()), "-p", "no:cacheprovider", "-p", PLUGIN]
        args += ["--driver", "reference", "--profile", "disruptive", "--allow-disruptive"]
        proc = subprocess.run(args, capture_output=True, text=True, env={**os.environ, ENV: str(target)}, check=False)
        if proc.returncode != 0 or not target.is_file():
            raise RuntimeError(f"collecting the suites failed (exit {proc.returncode}): {proc.stdout[-3000:]}")
        return json.loads(target.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    """``--write``: regenerate :data:`PATH`; ``--check``: exit 1 naming the difference when it is stale."""
    argv = sys.argv[1:] if argv is None else argv
    fresh = generate()
    if "--write" in argv:
        PATH.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {PATH}: " + ", ".join(f"{p} {len(ids)}" for p, ids in fresh.items()))
        return 0
    old = load()
    if fresh == old:
        return 0
    for profile in markers.PROFILE_ORDER:
        gone, new = (
            sorted(set(old.get(profile, [])) - set(fresh[profile])),
            sorted(set(fresh[profile]) - set(old.get(profile, []))),
        )
        if gone or new:
            print(f"{profile}: not collected any more {gone[:5]}; not in the manifest {new[:5]}")
    print(f"{PATH} is stale: run {REGENERATE}")
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
