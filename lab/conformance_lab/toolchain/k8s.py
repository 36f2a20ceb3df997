"""Build the Kubernetes server binaries of one tag from the k8s.io/kubernetes Go module.

`go install k8s.io/kubernetes/cmd/...@vX` does not work: upstream go.mod requires every staging module at
v0.0.0 with a local replace. We generate a wrapper module that requires k8s.io/kubernetes@<tag> and
replaces every staging module (list derived from the upstream go.mod of that tag) with v0.<minor>.<patch>
(or the earlier patch versions.toml's [kubernetes.staging_fallbacks] names where the proxy does not serve it),
copy the upstream go/godebug lines, and stamp the version ldflags so `kube-apiserver --version` prints the
real tag. Source: shared/reference/local-cluster.md §1; upstream hack/lib/version.sh.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

from conformance_lab.toolchain import cache
from conformance_lab.toolchain.gobuild import build_packages, run_go, write_wrapper
from conformance_lab.toolchain.steps import SetupError
from conformance_lab.toolchain.versions import load, staging_version

# binary name -> main package in the k8s.io/kubernetes module
K8S_PROGRAMS = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kubelet": "k8s.io/kubernetes/cmd/kubelet",
    "kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
    "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    # the upstream e2e DRA test driver's kubelet plugin (test/e2e/dra/test-driver), run in host mode
    "dra-test-driver": "k8s.io/kubernetes/test/e2e/dra/test-driver",
}

_STAGING_RE = re.compile(r"^\s*(k8s\.io/[^\s]+)\s+=>\s+\./staging/src/", re.M)


def staging_modules(upstream_gomod: str) -> list[str]:
    """Staging module paths replaced by ``./staging/src/...`` in an upstream k8s.io/kubernetes go.mod."""
    return sorted(set(_STAGING_RE.findall(upstream_gomod)))


def upstream_directives(upstream_gomod: str) -> tuple[str, list[str]]:
    """The ``go`` version and ``godebug`` lines of an upstream go.mod (dependencies' godebug is ignored)."""
    go_line = re.search(r"^go\s+(\S+)", upstream_gomod, re.M)
    godebug = [ln for ln in upstream_gomod.splitlines() if ln.startswith("godebug ")]
    return (go_line.group(1) if go_line else "1.24.0"), godebug


def version_ldflags(tag: str, commit: str = "") -> str:
    """The -X flags upstream sets on component-base and client-go version packages for ``tag``."""
    minor = tag[len("v1.") :].split(".")[0]
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    flags = []
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={tag}",
            f"-X {pkg}.gitMajor=1",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate={date}",
        ]
        if commit:
            flags.append(f"-X {pkg}.gitCommit={commit}")
    return " ".join(flags)


def is_built(tag: str) -> bool:
    """True when the cache holds a trusted entry of every K8S_PROGRAMS binary for ``tag``."""
    return cache.is_complete(cache.k8s_entry(tag), list(K8S_PROGRAMS))


def prepare(tag: str, log: Path) -> dict:
    """Download k8s.io/kubernetes@``tag`` and write + tidy its wrapper module (every module the build needs);
    return what :func:`build` stamps (``work``, ``staging``, ``staging_modules``, ``commit``). Network bound, so
    setup runs it beside other steps. Raises SetupError."""
    what = f"kubernetes {tag}"
    work = cache.root() / "work" / f"k8s-{tag}"
    work.mkdir(parents=True, exist_ok=True)
    info = json.loads(
        run_go(["mod", "download", "-json", f"k8s.io/kubernetes@{tag}"], work, f"{what}: download module", log)
    )
    upstream = Path(info["GoMod"]).read_text()
    modules = staging_modules(upstream)
    if len(modules) < 20:
        raise SetupError(
            what,
            f"found only {len(modules)} staging modules in the upstream go.mod",
            "the k8s.io/kubernetes go.mod layout changed; update lab/conformance_lab/toolchain/k8s.py",
        )
    staging = staging_version(tag)
    fallbacks = load().k8s_staging_fallbacks.get(tag, {})  # modules the proxy does not serve at ``staging``
    go_line, godebug = upstream_directives(upstream)
    write_wrapper(
        work,
        [f"k8s.io/kubernetes@{tag}"],
        list(K8S_PROGRAMS.values()),
        {m: f"{m}@{fallbacks.get(m, staging)}" for m in modules},
        go_line,
        godebug,
    )
    run_go(["mod", "tidy"], work, f"{what}: resolve modules", log)
    commit = (info.get("Origin") or {}).get("Hash", "")
    prep = {"work": work, "staging": staging, "staging_modules": modules, "commit": commit}
    return prep | ({"staging_fallbacks": dict(fallbacks)} if fallbacks else {})


def build(tag: str, log: Path, force: bool = False, prepared: dict | None = None) -> Path:
    """Build every program of K8S_PROGRAMS for ``tag`` into the cache (one `go build`); return the bin dir.
    ``prepared``: what :func:`prepare` returned (downloads already done).

    Raises SetupError (module proxy unreachable, compile failure) and leaves no trusted partial entry.
    """
    entry = cache.k8s_entry(tag)
    names = list(K8S_PROGRAMS)
    if not force and is_built(tag):
        return entry / "bin"
    prep = prepared or prepare(tag, log)
    tmp = cache.partial_dir(entry)
    try:
        build_packages(
            prep["work"],
            list(K8S_PROGRAMS.values()),
            names,
            tmp / "bin",
            "selinux,notest",
            version_ldflags(tag, prep["commit"]),
            f"kubernetes {tag}",
            log,
        )
        info = {"module": "k8s.io/kubernetes", "version": tag, "staging": prep["staging"]}
        info |= {"staging_modules": prep["staging_modules"], "commit": prep["commit"]}
        info |= {"staging_fallbacks": prep["staging_fallbacks"]} if prep.get("staging_fallbacks") else {}
        cache.commit(tmp, entry, names, info)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return entry / "bin"
