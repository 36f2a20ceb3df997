"""``dra-conformance preflight``: can ``run --cluster existing`` work on this cluster, for this driver profile?

Prints one line per check (``ok`` / ``missing`` / ``warn``, what it found, the fix; conformance/runner/
preflight_checks.py) and exits 0 when nothing required is missing, 1 when something is, 3 when the API server
cannot be reached or the kubeconfig not loaded, 4 for bad input (an unknown profile, a --kubeconfig naming no
file). ``-o json`` prints the list of ``{check, status, detail, fix}`` instead. Reads only, except the dry run of
the helper pods (``--node-access privileged-pod``), whose namespace is removed before it returns (Ctrl-C and
SIGTERM too).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from conformance.core import errors, output, permissions
from conformance.core.profile import DriverProfile
from conformance.k8s import discovery, kubeconfig
from conformance.k8s.client import K8s
from conformance.runner import preflight_checks as pc
from conformance.runner.registry import Registry

EXIT_OK, EXIT_MISSING, EXIT_INTERRUPTED, EXIT_UNREACHABLE, EXIT_BAD_INPUT = 0, 1, 2, 3, 4
NODE_ACCESS = ("none", "privileged-pod")


def register(subparsers) -> None:
    """Add ``preflight``."""
    p = subparsers.add_parser(
        "preflight",
        help="check that a run can work on an existing cluster (RBAC, driver, API, gates, admission, images)",
        description=__doc__.split("\n\n")[0].replace("``", "`"),
    )
    kubeconfig.add_options(p)
    p.add_argument("--driver", default="reference", help="driver profile name or path (default reference)")
    p.add_argument(
        "--node-access",
        dest="node_access",
        choices=NODE_ACCESS,
        default="none",
        help="privileged-pod: also check the privileged helper pods would be admitted (default none)",
    )
    p.add_argument(
        "--print-role",
        dest="print_role",
        action="store_true",
        help="print, without contacting a cluster, the ClusterRole (YAML) that grants what a run needs (with "
        "--node-access privileged-pod: also exec into the helper pods); bind it to the run's user (default: off)",
    )
    output.add_output_option(p)
    p.set_defaults(func=preflight_command)


def load_profile(driver: str) -> DriverProfile:
    """The profile of ``--driver`` as the run loads it (shipped name or path; deploy modes of registered
    deployers accepted). Raises ConfigError naming the input and the fix."""
    from conformance.drivers import profiles  # noqa: PLC0415 - loads yaml and the deployers only when needed

    registry = Registry()
    registry.add_entry_points()
    return profiles.load(driver, registry.deploy_modes())


def run_checks(k8s: K8s, profile: DriverProfile, node_access: bool) -> list[pc.Check]:
    """Every check, in order: API, RBAC, feature gates, driver, images, admission (with ``node_access``).
    A check whose reads are refused becomes a ``warn`` naming the error (the rbac lines name the permission).
    Raises ClusterUnavailable when the API server cannot be reached."""
    discovery.server_version(k8s)  # ClusterUnavailable first: nothing else can be asked
    served = discovery.served_versions(k8s)
    out = [pc.api_check(served)]
    out += _guarded("rbac", lambda: pc.rbac_checks(k8s, node_access, served))
    out += _guarded("feature gates", lambda: [pc.gates_check(k8s)])
    out += _guarded("driver", lambda: pc.driver_checks(k8s, profile))
    try:
        nodes = discovery.nodes(k8s)
    except errors.ApiError as exc:
        fix = "grant what the rbac lines name"
        return [*out, pc.Check("nodes", pc.WARN, f"images and admission not checked: {pc.first_line(exc)}", fix)]
    wanted = pc.images_wanted(nodes, profile, node_access)
    out += pc.image_checks(nodes, wanted)
    if node_access:
        helper = wanted["helper pods"]
        out += _guarded(
            "admission", lambda: [pc.admission_check(k8s, [n.name for n in nodes], helper, wanted["helper gRPC relay"])]
        )
    return out


def _guarded(name: str, check: Callable[[], list[pc.Check]]) -> list[pc.Check]:
    try:
        return check()
    except (errors.ApiError, errors.WaitError) as exc:
        return [pc.Check(name, pc.WARN, f"could not check: {pc.first_line(exc)}", "grant what the rbac lines name")]


def render(checks: list[pc.Check], output: str) -> str:
    """The text lines (``<status> <check>: <detail> (fix: ...)`` and a count) or the JSON list."""
    if output == "json":
        return json.dumps([c.as_dict() for c in checks], indent=2)
    lines = [f"{c.status:<7} {c.check}: {c.detail}" + (f" (fix: {c.fix})" if c.fix else "") for c in checks]
    counts = {s: sum(c.status == s for c in checks) for s in (pc.OK, pc.MISSING, pc.WARN)}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines)


def exit_code(checks: list[pc.Check]) -> int:
    """1 when a check is ``missing``, else 0 (warnings do not fail a preflight)."""
    return EXIT_MISSING if any(c.status == pc.MISSING for c in checks) else EXIT_OK


def preflight_command(args: argparse.Namespace) -> int:
    """Run the checks and print them; return the exit code (module docstring). With ``--print-role``: print
    the ClusterRole a run needs (conformance/core/permissions.py) and return 0, reading no cluster."""
    if getattr(args, "print_role", False):
        import yaml  # noqa: PLC0415 - only this branch writes YAML

        role = permissions.cluster_role(node_access=args.node_access == "privileged-pod")
        print("# The permissions a dra-conformance run needs (bind with a ClusterRoleBinding to the run's user).")
        print(yaml.safe_dump(role, sort_keys=False, width=200), end="")
        return EXIT_OK
    try:  # SIGTERM arrives as KeyboardInterrupt, as Ctrl-C does (conformance/cli.py, every command)
        profile = load_profile(args.driver)
        k8s = K8s.from_kubeconfig(args.kubeconfig, args.context)
        checks = run_checks(k8s, profile, args.node_access == "privileged-pod")
    except errors.ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except errors.ClusterUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        print("preflight interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(render(checks, args.output))
    return exit_code(checks)
