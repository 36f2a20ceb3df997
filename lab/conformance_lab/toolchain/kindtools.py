"""Programs `--cluster kind` needs beyond `make setup`: nerdctl, kubeadm, coredns and crictl.

All are built from the Go module proxy into the per-version cache (``tools/<name>-<version>/bin``), written
under a ``.partial-<pid>`` name and renamed only when complete (:mod:`conformance_lab.toolchain.cache`).

- nerdctl (``[kind] nerdctl``): its go.mod replaces the nested module ``mod/tigron`` with ``./mod/tigron``,
  which the module zip does not contain; the source is copied, a stub ``mod/tigron/go.mod`` written and the one
  non-test file that imports it (``cmd/nerdctl/helpers/testing_linux.go``) dropped. Source:
  shared/reference/kind-offline.md "Preparation" step 1.
- kubeadm: the Kubernetes wrapper module of :mod:`conformance_lab.toolchain.k8s` (same tag, replaces and version
  ldflags) with ``k8s.io/kubernetes/cmd/kubeadm`` added.
- coredns, crictl: ``[kind.go.*]`` tools, built like every ``[go.*]`` tool.

Go builds run under ``nice -n 10`` (the development machine's 2 cores are shared).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from conformance_lab.toolchain import cache, firstuse, gobuild, k8s
from conformance_lab.toolchain.steps import SetupError
from conformance_lab.toolchain.versions import load

NERDCTL_MODULE = "github.com/containerd/nerdctl/v2"
KUBEADM_PACKAGE = "k8s.io/kubernetes/cmd/kubeadm"


def _go(args: list[str], cwd: Path, what: str, log: Path) -> str:
    """``go <args>`` through :func:`gobuild.run_go`, niced (PATH lookup of `nice` then `go`)."""
    os.environ.setdefault("DRA_CONFORMANCE_GO_NICE", "10")
    return gobuild.run_go(args, cwd, what, log)


def nerdctl(log: Path, force: bool = False) -> Path:
    """Build nerdctl at the ``[kind] nerdctl`` pin; return the path of the binary. Raises SetupError."""
    version = load().kind.get("nerdctl")
    if not version:
        raise SetupError("nerdctl", "versions.toml has no [kind] nerdctl pin", 'add nerdctl = "v2.2.1" under [kind]')
    entry = cache.tool_entry("nerdctl", version)
    if not force and cache.is_complete(entry, ["nerdctl"]):
        return entry / "bin" / "nerdctl"
    what = f"nerdctl {version}"
    work = cache.root() / "work" / f"nerdctl-{version}"
    work.mkdir(parents=True, exist_ok=True)
    info = json.loads(_go(["mod", "download", "-json", f"{NERDCTL_MODULE}@{version}"], work, what, log))
    src = work / "src"
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(info["Dir"], src, copy_function=shutil.copyfile)
    for path in src.rglob("*"):
        path.chmod(path.stat().st_mode | stat.S_IWUSR | (stat.S_IXUSR if path.is_dir() else 0))
    (src / "mod" / "tigron").mkdir(parents=True, exist_ok=True)
    (src / "mod" / "tigron" / "go.mod").write_text("module github.com/containerd/nerdctl/mod/tigron\n\ngo 1.24\n")
    (src / "cmd" / "nerdctl" / "helpers" / "testing_linux.go").unlink(missing_ok=True)
    tmp = cache.partial_dir(entry)
    try:
        ldflags = f"-s -w -X {NERDCTL_MODULE}/pkg/version.Version={version}"
        _go(
            ["build", "-trimpath", "-ldflags", ldflags, "-o", str(tmp / "bin" / "nerdctl"), "./cmd/nerdctl"],
            src,
            what,
            log,
        )
        cache.commit(tmp, entry, ["nerdctl"], {"module": NERDCTL_MODULE, "version": version})
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(src, ignore_errors=True)
    return entry / "bin" / "nerdctl"


def kubeadm(tag: str, log: Path, force: bool = False) -> Path:
    """Build kubeadm for Kubernetes ``tag`` (e.g. v1.34.4) from the same wrapper module as the other
    Kubernetes binaries; return its path. Raises SetupError (CacheMiss when `make setup` did not build ``tag``)."""
    entry = cache.tool_entry("kubeadm", tag)
    if not force and cache.is_complete(entry, ["kubeadm"]):
        return entry / "bin" / "kubeadm"
    what = f"kubeadm {tag}"
    base = cache.root() / "work" / f"k8s-{tag}"
    if not (base / "go.mod").is_file() or not cache.is_complete(cache.k8s_entry(tag), list(k8s.K8S_PROGRAMS)):
        minor = tag[1:].rsplit(".", 1)[0]
        raise SetupError(
            what,
            f"Kubernetes {tag} is not built",
            f"run `dra-conformance setup --k8s-version {minor}` (`make setup K8S_VERSION={minor}` in a checkout) first",
        )
    work = cache.root() / "work" / f"kubeadm-{tag}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for name in ("go.mod", "go.sum"):
        shutil.copyfile(base / name, work / name)
    imports = [*k8s.K8S_PROGRAMS.values(), KUBEADM_PACKAGE]
    body = "\n".join(f'\t_ "{imp}"' for imp in imports)
    (work / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{body}\n)\n")
    _go(["mod", "tidy"], work, f"{what}: resolve modules", log)
    commit = json.loads((cache.k8s_entry(tag) / cache.MANIFEST).read_text()).get("commit", "")
    tmp = cache.partial_dir(entry)
    try:
        gobuild.build_packages(
            work,
            [KUBEADM_PACKAGE],
            ["kubeadm"],
            tmp / "bin",
            "selinux,notest",
            k8s.version_ldflags(tag, commit),
            what,
            log,
        )
        cache.commit(tmp, entry, ["kubeadm"], {"module": "k8s.io/kubernetes", "version": tag})
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return entry / "bin" / "kubeadm"


def node_tools(log: Path) -> dict[str, Path]:
    """Build (or find cached) every ``[kind.go.*]`` tool; return binary name -> path."""
    out = {}
    for tool in load().kind_tools.values():
        bindir = gobuild.build_tool(tool, log)
        out.update({b: bindir / b for b in tool.binaries})
    return out


def all_tools(tag: str, log: Path) -> dict[str, Path]:
    """nerdctl, kubeadm (``tag``), coredns and crictl: binary name -> cached path; kind itself is built on first use
    too (the node image's base layer reads its module). Raises SetupError."""
    try:
        firstuse.build("kind")
    except cache.CacheMiss as exc:
        raise SetupError("kind", str(exc), f"run {firstuse.SETUP_ALL} (it builds kind from its module)") from None
    return {"nerdctl": nerdctl(log), "kubeadm": kubeadm(tag, log), **node_tools(log)}
