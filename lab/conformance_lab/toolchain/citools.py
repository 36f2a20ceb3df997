"""The runners of the CI templates on this machine: act, actionlint (Go) and gitlab-ci-local (npm).

Pinned in versions.toml ``[ci]`` / ``[ci.go.*]``; built or installed into the cache on first use
(``tools/<name>-<version>/bin``, written under a ``.partial-<pid>`` name and renamed when complete, as every lab
tool: :mod:`conformance_lab.toolchain.cache`, under the entry's lock). Not part of `make setup`: only `make
ci-templates` and the tests of the templates need them. `make setup-all` builds actionlint and the Groovy parser
ahead (:func:`setup_groovy`, conformance_lab/toolchain/setup.py), so `make test`, which looks in the cache only
and never downloads, finds them. Upstream: github.com/nektos/act, github.com/rhysd/actionlint, npm
``gitlab-ci-local``."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from conformance_lab.toolchain import cache, gobuild, system
from conformance_lab.toolchain.steps import SetupError
from conformance_lab.toolchain.versions import load

GITLAB_CI_LOCAL = "gitlab-ci-local"
SETUP_ALL = "run `dra-conformance setup --all` (`make setup-all` in a checkout), which builds it"
STEP_TIMEOUT_S = 300  # seconds for one mvn download or javac compile (about a minute cold)


def _log() -> Path:
    logs = cache.root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return logs / f"citools-{time.strftime('%Y%m%d-%H%M%S')}.log"


def go_tool(name: str, build: bool = True) -> Path:
    """The path of the ``[ci.go.<name>]`` binary (``act`` or ``actionlint``), built from the Go module proxy
    (niced, under the entry's lock) on first use; `make setup-all` builds actionlint ahead. ``build=False``
    (`make test`: no download) only looks in the cache. Raises SetupError naming the failed step and its log,
    or, with ``build=False``, that it is not built and the command that builds it; KeyError for an unknown name."""
    tool = load().ci_tools[name]
    entry = cache.tool_entry(tool.name, tool.version)
    if gobuild.is_built(tool):
        return entry / "bin" / tool.binaries[0]
    if not build:
        raise SetupError(f"{name} {tool.version}", "not built (this check does not download)", SETUP_ALL)
    os.environ.setdefault("DRA_CONFORMANCE_GO_NICE", "10")
    with cache.locked(entry):
        return gobuild.build_tool(tool, _log()) / tool.binaries[0]


def gitlab_ci_local() -> Path:
    """The path of the pinned ``gitlab-ci-local`` (``[ci] gitlab-ci-local``), `npm install`ed into the cache on first
    use (about 5 s); rsync (it copies the tree with it) is apt-installed when missing. Raises SetupError when npm is
    missing, rsync cannot be installed, or the install fails."""
    version = load().ci[GITLAB_CI_LOCAL]
    if shutil.which("rsync") is None:  # it rsyncs the tracked files before any job runs (shell executor included)
        system.install_debian(("rsync",))  # SetupError names the fix when not root / no archive
    entry = cache.tool_entry(GITLAB_CI_LOCAL, version)
    if cache.is_complete(entry, [GITLAB_CI_LOCAL]):
        return entry / "bin" / GITLAB_CI_LOCAL
    if shutil.which("npm") is None:
        raise SetupError(GITLAB_CI_LOCAL, "npm is not on PATH", "install Node.js >= 20 with npm")
    with cache.locked(entry):
        if not cache.is_complete(entry, [GITLAB_CI_LOCAL]):
            _npm_install(entry, version)
    return entry / "bin" / GITLAB_CI_LOCAL


def _npm_install(entry: Path, version: str) -> None:
    """`npm install` the pinned gitlab-ci-local into a partial directory and commit it as ``entry`` (the caller
    holds the entry's lock). Raises SetupError when npm fails or runs past :data:`STEP_TIMEOUT_S`."""
    tmp = cache.partial_dir(entry)
    try:
        cmd = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(tmp / "npm")]
        _run([*cmd, f"{GITLAB_CI_LOCAL}@{version}"], f"{GITLAB_CI_LOCAL} {version}", "check the npm registry")
        (tmp / "bin").mkdir(parents=True, exist_ok=True)
        (tmp / "bin" / GITLAB_CI_LOCAL).symlink_to(Path("..") / "npm" / "node_modules" / ".bin" / GITLAB_CI_LOCAL)
        cache.commit(tmp, entry, [GITLAB_CI_LOCAL], {"package": GITLAB_CI_LOCAL, "version": version})
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


GROOVY_CHECK = """public class GroovyParse {
  public static void main(String[] a) throws Exception {
    String text = new String(java.nio.file.Files.readAllBytes(java.nio.file.Path.of(a[0])));
    org.codehaus.groovy.control.CompilationUnit cu = new org.codehaus.groovy.control.CompilationUnit();
    cu.addSource(a[0], text);
    cu.compile(org.codehaus.groovy.control.Phases.SEMANTIC_ANALYSIS);
    System.out.println("parsed " + a[0]);
  }
}
"""


def _run(cmd: list[str], what: str, fix: str) -> None:
    """Run one setup command with :data:`STEP_TIMEOUT_S`; raise SetupError naming ``what``, the command and its
    output tail when it fails or runs past the limit."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise SetupError(what, f"`{' '.join(cmd[:3])} ...` did not finish in {STEP_TIMEOUT_S} s", fix) from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise SetupError(what, f"`{' '.join(cmd[:3])} ...` failed (exit {proc.returncode}):\n{tail}", fix)


def groovy_parser(build: bool = True) -> list[str]:
    """The command (``java -cp ... GroovyParse``; append a file) that parses a Groovy file (a Jenkinsfile) with the
    pinned Groovy compiler up to semantic analysis: exit 0 and ``parsed <file>``, or exit 1 with Groovy's
    ``startup failed: <file>: <line>: <message>``. The jar comes from Maven Central (`mvn dependency:get`, about a
    minute cold, into ~/.m2), the checker is compiled into a cache entry (a partial directory renamed when
    complete, under the entry's lock); `make setup-all` builds both ahead where a JDK and Maven are installed.
    ``build=False`` (`make test`: no download) only looks in the cache. Raises SetupError without mvn/javac, when
    a step fails or runs past :data:`STEP_TIMEOUT_S`, or (``build=False``) when not built, naming the fix."""
    version = load().ci["groovy"]
    jar = (
        Path.home() / ".m2" / "repository" / "org" / "apache" / "groovy" / "groovy" / version / f"groovy-{version}.jar"
    )
    what, entry = f"groovy {version}", cache.tool_entry("groovy-parse", version)
    command = ["java", "-cp", f"{jar}:{entry / 'bin'}", "GroovyParse"]
    if jar.is_file() and cache.is_complete(entry, [CLASS]):
        return command
    if not build:
        raise SetupError(what, "the Groovy parser is not built (this check does not download)", SETUP_ALL)
    for tool in ("mvn", "javac", "java"):
        if shutil.which(tool) is None:
            raise SetupError(what, f"{tool} is not on PATH", "install a JDK (>= 17) and Maven")
    with cache.locked(entry):
        if not jar.is_file():
            artifact = f"-Dartifact=org.apache.groovy:groovy:{version}"
            cmd = ["mvn", "-q", "-B", "dependency:get", artifact, "-Dtransitive=false"]
            _run(cmd, what, "check Maven Central access (or a mirror in ~/.m2/settings.xml) and re-run")
            if not jar.is_file():
                raise SetupError(what, f"`mvn dependency:get` left no {jar}", "check ~/.m2/settings.xml")
        if not cache.is_complete(entry, [CLASS]):
            tmp = cache.partial_dir(entry)
            try:
                (tmp / "GroovyParse.java").write_text(GROOVY_CHECK)
                _run(["javac", "-cp", str(jar), "-d", str(tmp / "bin"), str(tmp / "GroovyParse.java")], what, JDK)
                cache.commit(tmp, entry, [CLASS], {"package": "groovy", "version": version})
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
    return command


def setup_groovy() -> str:
    """The `make setup-all` step of the Groovy parser: :func:`groovy_parser` where a JDK and Maven are on PATH
    (returns "ready"); otherwise returns why it is left out (the Jenkinsfile check of `make test` then skips
    naming it). Raises SetupError when a download or compile fails."""
    missing = [tool for tool in ("mvn", "javac", "java") if shutil.which(tool) is None]
    if missing:
        return f"left out: {', '.join(missing)} not on PATH (install a JDK >= 17 and Maven to check the Jenkinsfile)"
    return f"ready: {' '.join(groovy_parser())}"


CLASS = "GroovyParse.class"
JDK = "install a JDK (>= 17); the checker source is citools.GROOVY_CHECK"
