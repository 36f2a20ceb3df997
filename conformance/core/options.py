"""The run options, declared once: ``dra-conformance run`` (argparse) and the pytest plugin
(``pytest_addoption``) both read :data:`OPTIONS`, so a flag, its help and its default read the same in
``dra-conformance run --help`` and ``pytest --help``.

Defaults are stated in the help text (pytest declares every harness option with default None, and
:func:`conformance.core.config.from_options` turns None into the :class:`~conformance.core.config.RunConfig`
default; ``run`` gives the same value or leaves it None). Help texts carry no ``%`` (argparse formats them).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable

from conformance.core.config import RunConfig


@dataclasses.dataclass(frozen=True)
class RunOption:
    """One option: ``flag`` (``--name``), ``text`` (what it does), ``default`` (help text of the default;
    empty: RunConfig's default value), ``switch`` (store_true), ``run_default`` (argparse default of ``run``;
    None: not given), ``pytest_only`` (not offered by ``run``, e.g. ``--run-id`` which ``run`` generates),
    ``forward`` (``run`` hands the value to pytest as given; False: ``run`` computes it, e.g. ``--report-dir``)."""

    flag: str
    text: str
    default: str = ""
    switch: bool = False
    run_default: str | None = None
    pytest_only: bool = False
    forward: bool = True

    @property
    def dest(self) -> str:
        """The attribute name (RunConfig field): ``--k8s-version`` -> ``k8s_version``."""
        return self.flag[2:].replace("-", "_")

    @property
    def help(self) -> str:
        """The help line, ending with the default: ``"... (default: standard)"``."""
        if self.switch:
            return f"{self.text} (default: off)"
        default = self.default or str(getattr(RunConfig, self.dest))
        return f"{self.text} (default: {default})"


OPTIONS: tuple[RunOption, ...] = (
    RunOption("--cluster", "cluster provider: local | kind | existing", run_default="local"),
    RunOption("--kubeconfig", "kubeconfig of an existing cluster", "$KUBECONFIG, else ~/.kube/config"),
    RunOption("--context", "kubeconfig context", "the kubeconfig's current-context"),
    RunOption("--k8s-version", "Kubernetes minor of a local/kind cluster, e.g. 1.34", "the lab's pinned version"),
    RunOption("--feature-gates", "defaults | all (feature gates of a local/kind cluster)", run_default="all"),
    RunOption(
        "--driver",
        "a shipped driver profile (dra-conformance profile list) or the path of a profile YAML",
        run_default="reference",
    ),
    RunOption(
        "--driver-deploy",
        "bundled | host | helm | manifests | preinstalled",
        "the profile's on a cluster the run creates; preinstalled on --cluster existing",
    ),
    RunOption(
        "--allow-install",
        "let --driver-deploy helm|manifests|... install the driver on a cluster the run did not create "
        "(--cluster existing); refused when the release or objects already exist, and tear-down removes only "
        "what the run installed",
        switch=True,
    ),
    RunOption("--profile", "test profile: core | standard | full | disruptive", run_default="standard"),
    RunOption("--allow-disruptive", "allow the disruptive profile (restarts kubelets and driver plugins)", switch=True),
    RunOption("--image-repo", "registry prefix replacing the driver images' repository", "the profile's images"),
    RunOption(
        "--image-registry",
        "HOST[:PORT][/PREFIX] the test, probe and helper pods pull the suite's images from (dra-conformance images "
        "push --registry); with --cluster kind, 127.0.0.1:PORT of a registry every kind node pulls through "
        "(nothing loaded)",
        "the nodes' offline images, else public busybox",
    ),
    RunOption("--values", "a Helm values file for --driver-deploy helm, applied after the profile's values", "none"),
    RunOption("--report-dir", "report directory", "reports/<run-id>", forward=False),
    RunOption("--timeout-scale", "multiply every wait timeout (slow clusters)", "1"),
    RunOption("--nodes", "node count of a local/kind cluster"),
    RunOption("--node-access", "auto | none | privileged-pod (privileged-pod: explicit opt-in on existing clusters)"),
    RunOption("--run-id", "run ID labelling every object", "generated", pytest_only=True),
    RunOption("--keep-cluster", "leave the local/kind cluster running after the run", switch=True),
    RunOption(
        "--cluster-feature-gates",
        "existing clusters: Name=true,... gates the admin states (for gates its metrics do not report)",
        "none",
    ),
    RunOption(
        "--kind-name", "kind cluster name (--cluster kind): an existing one is reused and kept", "dra-<run-id suffix>"
    ),
)
BY_DEST = {o.dest: o for o in OPTIONS}


def add_arguments(parser: argparse.ArgumentParser, dests: Iterable[str] | None = None) -> None:
    """Add the ``run`` options (all but pytest-only ones, or those named by ``dests``) to an argparse parser,
    with their help and ``run`` defaults. Raises KeyError for an unknown dest (a programming error)."""
    chosen = [BY_DEST[d] for d in dests] if dests is not None else [o for o in OPTIONS if not o.pytest_only]
    for opt in chosen:
        if opt.switch:
            parser.add_argument(opt.flag, dest=opt.dest, action="store_true", help=opt.help)
        else:
            parser.add_argument(opt.flag, dest=opt.dest, default=opt.run_default, help=opt.help)


def to_pytest(args: argparse.Namespace) -> list[str]:
    """The pytest arguments for the forwarded options set in a ``run`` namespace: ``["--driver", "x",
    "--keep-cluster", ...]`` (None, "" and False left out)."""
    out: list[str] = []
    for opt in OPTIONS:
        value = getattr(args, opt.dest, None)
        if opt.pytest_only or not opt.forward or value in (None, "", False):
            continue
        out += [opt.flag] if opt.switch else [opt.flag, str(value)]
    return out
