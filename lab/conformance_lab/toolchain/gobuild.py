"""Build Go programs from the Go module proxy through generated wrapper modules.

`go install pkg@version` refuses modules whose go.mod has replace/exclude directives (k8s.io/kubernetes,
etcd server, some containerd tags), so every tool is built the same way: a throw-away main module that
requires the tool's module (plus explicit replaces where upstream needs them) and `go build`s its main
packages. Source: golang.org/ref/mod#go-install; shared/reference/local-cluster.md §1-§5.
"""

from __future__ import annotations

import hashlib
import os
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


def go_env() -> dict[str, str]:
    """Environment for reproducible, static builds outside any go.work."""
    env = dict(os.environ)
    env.update(GOWORK="off", GOFLAGS="-mod=mod", CGO_ENABLED="0")
    return env


def run_go(args: list[str], cwd: Path, what: str, log: Path, env: dict[str, str] | None = None) -> str:
    """Run ``go <args>`` in ``cwd`` (``env``: extra variables for this command only); append output to ``log``;
    return stdout.

    Raises SetupError naming ``what``, the failing command, the log file and the likely fix (registry
    unreachable vs. build failure).
    """
    if shutil.which("go") is None:
        raise SetupError(what, "the `go` command is not on PATH", "install Go >= 1.24 (this machine ships it)")
    nice = os.environ.get("DRA_CONFORMANCE_GO_NICE")  # e.g. "10": builds yield to the machine's other work
    cmd = (["nice", "-n", nice] if nice else []) + ["go", *args]
    proc = subprocess.run(cmd, cwd=cwd, env={**go_env(), **(env or {})}, capture_output=True, text=True)
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
    """`go build` each main package to ``bindir/<output>`` (one at a time to bound memory on 2 cores)."""
    for pkg, out in zip(packages, outputs, strict=True):
        args = ["build", "-trimpath", "-ldflags", f"-s -w {ldflags}".strip(), "-o", str(bindir / out)]
        if tags:
            args[1:1] = ["-tags", tags]
        run_go(args + [pkg], workdir, f"{what}: build {out}", log, env)


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


def build_tool(tool: GoTool, log: Path, force: bool = False) -> Path:
    """Build one pinned Go tool into the cache unless a trusted entry exists; return its bin dir."""
    entry = cache.tool_entry(tool.name, tool.version)
    if not force and cache.is_complete(entry, tool.binaries, fingerprint(tool)):
        return entry / "bin"
    tmp = cache.partial_dir(entry)
    try:
        work = cache.root() / "work" / f"{tool.name}-{tool.version}"
        requires = [f"{tool.module}@{tool.version}"] + [f"{m}@{tool.version}" for m in tool.extra_modules]
        write_wrapper(work, requires, list(tool.packages), dict(tool.replaces))
        env = module_env(tool)
        run_go(["mod", "tidy"], work, f"{tool.name} {tool.version}: resolve modules", log, env)
        build_packages(
            work,
            list(tool.packages),
            list(tool.binaries),
            tmp / "bin",
            tool.tags,
            tool.ldflags,
            f"{tool.name} {tool.version}",
            log,
            env,
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
