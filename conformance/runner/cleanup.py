"""``dra-conformance cleanup``: remove what a killed run left on a cluster (the session sweep as a command).

Everything a run creates carries ``dra-conformance.test/run=<run id>`` (conformance/core/names.py); the sweep
(conformance/k8s/sweep.py, design.md §6) deletes those objects in DRA order and waits until they are gone.
``--run-id ID`` sweeps one run, ``--all`` every run found on the cluster; ``--dry-run`` only lists. Objects
without the run label are never touched, nor those labelled ``owner=driver`` (the driver deployer removes
them with the driver). Exit 0 (done, or nothing to do), 1 (something survived the sweep), 3 (cluster not
reachable), 4 (bad input).
"""

from __future__ import annotations

import argparse
import sys

from conformance.core import errors, names
from conformance.core.objects import Obj
from conformance.k8s import discovery, kubeconfig, sweep
from conformance.k8s.client import K8s
from conformance.runner.preflight import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_UNREACHABLE

EXIT_OK, EXIT_LEAK = 0, 1


def register(subparsers) -> None:
    """Add ``cleanup``."""
    p = subparsers.add_parser(
        "cleanup",
        help="remove what a killed run left on a cluster (objects labelled with its run ID)",
        description=__doc__.split("\n\n")[0].replace("``", "`"),
    )
    kubeconfig.add_options(p)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--run-id", dest="run_id", help="the run to remove (its ID, e.g. r20261205-0853-a1b2)")
    which.add_argument("--all", action="store_true", help="every run whose objects are on the cluster")
    p.add_argument("--dry-run", dest="dry_run", action="store_true", help="list what would be removed, remove nothing")
    p.set_defaults(func=cleanup_command)


def leftovers(k8s: K8s, run_id: str) -> tuple[list[Obj], list[Obj]]:
    """``(to remove, kept)``: the objects labelled with ``run_id``, split into the sweep's and the driver
    deployer's (``owner=driver``). Raises ApiError from the lists."""
    found = sweep.labelled(k8s, run_id)
    return [o for o in found if not sweep.driver_owned(o)], [o for o in found if sweep.driver_owned(o)]


def clean(k8s: K8s, run_ids: list[str], dry_run: bool, out=print) -> int:
    """Sweep each run of ``run_ids`` (or only list with ``dry_run``), printing ``removed|would remove <Kind
    ns/name>`` per object; returns the exit code (1 when something survived). Raises ApiError."""
    code, total = EXIT_OK, 0
    for run_id in run_ids:
        doomed, kept = leftovers(k8s, run_id)
        total += len(doomed)
        for obj in kept:
            out(f"kept {obj.ref} (run {run_id}: the driver's, removed with the driver)")
        if dry_run or not doomed:
            for obj in doomed:
                out(f"would remove {obj.ref} (run {run_id})")
            continue
        try:
            sweep.sweep_run(k8s, run_id)
        except errors.LeakError as exc:
            out(f"error: run {run_id}: {exc}")
            code = EXIT_LEAK
            continue
        for obj in doomed:
            out(f"removed {obj.ref} (run {run_id})")
    verb = "would remove" if dry_run else "removed" if code == EXIT_OK else "asked to remove"
    out(f"{verb} {total} object(s) of {len(run_ids)} run(s)" if run_ids else "no objects of a run found")
    return code


def cleanup_command(args: argparse.Namespace) -> int:
    """Run ``cleanup`` (module docstring); returns the exit code."""
    try:
        k8s = K8s.from_kubeconfig(args.kubeconfig, args.context)
        discovery.server_version(k8s)
        run_ids = sweep.run_ids(k8s) if args.all else [names.label_value(args.run_id)]
        return clean(k8s, run_ids, args.dry_run)
    except errors.ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except errors.ClusterUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except errors.ApiError as exc:
        if exc.status == 401:  # the credentials were refused: no permission would help (s16 new-user F1)
            print(f"error: {discovery.refused(exc, k8s)}", file=sys.stderr)
            return EXIT_UNREACHABLE
        print(f"error: {exc} (the cleanup needs list/delete on the run's kinds: see `dra-conformance preflight`)")
        return EXIT_LEAK
    except KeyboardInterrupt:
        print("cleanup interrupted: run it again to finish", file=sys.stderr)
        return EXIT_INTERRUPTED
