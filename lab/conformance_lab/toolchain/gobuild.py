"""Build Go programs from the Go module proxy through generated wrapper modules.

`go install pkg@version` refuses modules whose go.mod has replace/exclude directives (k8s.io/kubernetes,
etcd server, some containerd tags), so every tool is built the same way: a throw-away main module that
requires the tool's module (plus explicit replaces where upstream needs them) and `go build`s its main
packages. Source: golang.org/ref/mod#go-install; shared/reference/local-cluster.md §1-§5.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from conformance_lab.toolchain import cache
from conformance_lab.toolchain.steps import SetupError
from conformance_lab.toolchain.versions import GoTool

_NETWORK_HINTS = (
    "dial tcp",
    "no such host",
    "i/o timeout",
    "connection refused",
    "TLS handshake",
    "403 Forbidden",
    "404 Not Found",
    "410 Gone",
    "proxyconnect",
)
# seconds one `go` command may run: a hang guard (the largest cold builds take 10-40 min in several commands; a
# Kubernetes build at nice 19 on a loaded 2-core host ran past 60 min, session 14); DRA_CONFORMANCE_GO_TIMEOUT_S
# raises it for one setup
GO_TIMEOUT_S = 3600


def go_timeout_s() -> int:
    """Seconds one ``go`` command may run: ``DRA_CONFORMANCE_GO_TIMEOUT_S`` when set (a positive integer), else
    :data:`GO_TIMEOUT_S`. Raises SetupError naming the variable for any other value."""
    raw = os.environ.get("DRA_CONFORMANCE_GO_TIMEOUT_S", "").strip()
    if not raw:
        return GO_TIMEOUT_S
    if not raw.isdigit() or int(raw) <= 0:
        raise SetupError("go", f"DRA_CONFORMANCE_GO_TIMEOUT_S={raw!r} is not a positive number of seconds", "e.g. 7200")
    return int(raw)


def go_env() -> dict[str, str]:
    """Environment for reproducible, static builds outside any go.work."""
    env = dict(os.environ)
    env.update(GOWORK="off", GOFLAGS="-mod=mod", CGO_ENABLED="0")
    return env


def run_go(args: list[str], cwd: Path, what: str, log: Path, env: dict[str, str] | None = None) -> str:
    """Run ``go <args>`` in ``cwd`` (``env``: extra variables for this command only); append output to ``log``;
    return stdout.

    Raises SetupError naming ``what``, the failing command, the log file and the likely fix (registry
    unreachable vs. build failure), or that it ran past :func:`go_timeout_s`.
    """
    if shutil.which("go") is None:
        raise SetupError(what, "the `go` command is not on PATH", "install Go >= 1.24 (this machine ships it)")
    nice = os.environ.get("DRA_CONFORMANCE_GO_NICE")  # e.g. "10": builds yield to the machine's other work
    cmd = (["nice", "-n", nice] if nice else []) + ["go", *args]
    limit = go_timeout_s()
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, env={**go_env(), **(env or {})}, capture_output=True, text=True, timeout=limit
        )
    except subprocess.TimeoutExpired as exc:
        raise SetupError(
            what,
            f"`go {' '.join(args[:3])} ...` did not finish in {limit} s (a hung module download, or a build slowed "
            "by load or nice)",
            f"check the Go module proxy ({go_env().get('GOPROXY') or 'default'}) and re-run (Go's build cache keeps "
            f"what was compiled), or raise DRA_CONFORMANCE_GO_TIMEOUT_S; log: {log}",
        ) from exc
    with log.open("a") as fh:
        fh.write(f"$ (cd {cwd} && go {' '.join(args)})\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        if any(h in tail for h in _NETWORK_HINTS):
            fix = (
                f"the Go module proxy ({go_env().get('GOPROXY') or 'default'}) could not serve a module; "
                "check the network or GOPROXY and re-run `make setup` (nothing half-built is kept)"
            )
        else:
            fix = f"read {log} for the compiler error; re-run `make setup` after fixing it"
        raise SetupError(what, f"`go {' '.join(args[:3])} ...` failed:\n{tail}", fix)
    return proc.stdout


def write_wrapper(
    workdir: Path,
    requires: list[str],
    imports: list[str],
    replaces: dict[str, str],
    go_line: str | None = None,
    godebug: list[str] = (),
) -> None:
    """Write a fresh wrapper module in ``workdir``: go.mod (requires, replaces, go/godebug lines) + tools.go.

    ``requires`` are ``module@version`` strings; ``imports`` are package paths kept by a tools.go file.
    """
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    lines = ["module local.invalid/draconformancebuild", "", f"go {go_line or '1.24.0'}"]
    lines += list(godebug)
    lines += ["", "require ("] + [f"\t{r.replace('@', ' ', 1)}" for r in requires] + [")"]
    if replaces:
        lines += ["", "replace ("] + [f"\t{m} => {t.replace('@', ' ', 1)}" for m, t in sorted(replaces.items())] + [")"]
    (workdir / "go.mod").write_text("\n".join(lines) + "\n")
    body = "\n".join(f'\t_ "{imp}"' for imp in imports)
    (workdir / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{body}\n)\n")


def exe_name(package: str) -> str:
    """The file name `go build -o DIR/` gives a main ``package``: its last path element, or the one before
    a major-version suffix (``go.etcd.io/etcd/server/v3`` -> ``server``). Source: `go help build` (-o)."""
    parts = package.rstrip("/").split("/")
    if len(parts) > 1 and re.fullmatch(r"v[2-9]|v[1-9][0-9]+", parts[-1]):
        return parts[-2]
    return parts[-1]


def build_packages(
    workdir: Path,
    packages: list[str],
    outputs: list[str],
    bindir: Path,
    tags: str,
    ldflags: str,
    what: str,
    log: Path,
    env: dict[str, str] | None = None,
) -> None:
    """`go build` every main package to ``bindir/<output>`` in ONE invocation (``-o DIR/``), so the Go command
    compiles and links the programs side by side on the idle cores; each output is then renamed from
    :func:`exe_name` to its ``outputs`` name. Packages whose default names collide build one at a time.
    Raises SetupError naming the failing build."""
    args = ["build", "-trimpath", "-ldflags", f"-s -w {ldflags}".strip()]
    if tags:
        args[1:1] = ["-tags", tags]
    names = [exe_name(p) for p in packages]
    if len(packages) > 1 and len(set(names)) == len(names):
        out = bindir / ".go-build-out"
        out.mkdir(parents=True, exist_ok=True)
        run_go(args + ["-o", f"{out}/", *packages], workdir, f"{what}: build {', '.join(outputs)}", log, env)
        for name, want in zip(names, outputs, strict=True):
            os.replace(out / name, bindir / want)
        out.rmdir()
        return
    for pkg, want in zip(packages, outputs, strict=True):
        run_go(args + ["-o", str(bindir / want), pkg], workdir, f"{what}: build {want}", log, env)


def fingerprint(tool: GoTool) -> str:
    """A stable digest of everything that shapes a tool's build (module, version, packages, tags, ldflags)."""
    spec = repr(
        (
            tool.module,
            tool.version,
            tool.extra_modules,
            tool.packages,
            tool.binaries,
            tool.tags,
            tool.ldflags,
            tool.replaces,
        )
        + ((tool.nosumdb,) if tool.nosumdb else ())
    )
    return hashlib.sha256(spec.encode()).hexdigest()[:16]


def module_env(tool: GoTool) -> dict[str, str]:
    """Variables for the commands that fetch and build ``tool``: ``GONOSUMDB=<module>`` when its versions.toml
    entry says ``nosumdb`` (a version the proxy serves but sum.golang.org has no entry for; go.sum still records
    the hash the proxy served); {} otherwise. Scoped to that tool's commands, never set globally."""
    return {"GONOSUMDB": tool.module} if tool.nosumdb else {}


def prepare_tool(tool: GoTool, log: Path) -> Path:
    """Write ``tool``'s wrapper module and download every module it needs (`go mod tidy`); return the work
    directory. Network bound, so setup runs it beside the builds. Raises SetupError."""
    work = cache.root() / "work" / f"{tool.name}-{tool.version}"
    requires = [f"{tool.module}@{tool.version}"] + [f"{m}@{tool.version}" for m in tool.extra_modules]
    write_wrapper(work, requires, list(tool.packages), dict(tool.replaces))
    run_go(["mod", "tidy"], work, f"{tool.name} {tool.version}: resolve modules", log, module_env(tool))
    return work


def is_built(tool: GoTool) -> bool:
    """True when the cache holds a trusted entry of ``tool`` built with its current pins."""
    return cache.is_complete(cache.tool_entry(tool.name, tool.version), tool.binaries, fingerprint(tool))


def build_tool(tool: GoTool, log: Path, force: bool = False, prepared: Path | None = None) -> Path:
    """Build one pinned Go tool into the cache unless a trusted entry exists; return its bin dir.
    ``prepared``: the work directory :func:`prepare_tool` returned (downloads already done)."""
    entry = cache.tool_entry(tool.name, tool.version)
    if not force and is_built(tool):
        return entry / "bin"
    tmp = cache.partial_dir(entry)
    try:
        work = prepared or prepare_tool(tool, log)
        build_packages(
            work,
            list(tool.packages),
            list(tool.binaries),
            tmp / "bin",
            tool.tags,
            tool.ldflags,
            f"{tool.name} {tool.version}",
            log,
            module_env(tool),
        )
        cache.commit(
            tmp,
            entry,
            tool.binaries,
            {"module": tool.module, "version": tool.version, "fingerprint": fingerprint(tool)},
        )
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return entry / "bin"
