"""The runners of the CI templates on this machine: act, actionlint (Go) and gitlab-ci-local (npm).

Pinned in versions.toml ``[ci]`` / ``[ci.go.*]``; built or installed into the cache on first use
(``tools/<name>-<version>/bin``, written under a ``.partial-<pid>`` name and renamed when complete, as every lab
tool: :mod:`conformance_lab.toolchain.cache`). Not part of `make setup`: only `make ci-templates` and the tests of
the templates need them. Upstream: github.com/nektos/act, github.com/rhysd/actionlint, npm ``gitlab-ci-local``.
"""

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


def _log() -> Path:
    logs = cache.root() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    return logs / f"citools-{time.strftime('%Y%m%d-%H%M%S')}.log"


def go_tool(name: str) -> Path:
    """The path of the ``[ci.go.<name>]`` binary (``act`` or ``actionlint``), built from the Go module proxy
    (niced) on first use. Raises SetupError naming the failed step and its log; KeyError for an unknown name."""
    tool = load().ci_tools[name]
    os.environ.setdefault("DRA_CONFORMANCE_GO_NICE", "10")
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
    tmp = cache.partial_dir(entry)
    try:
        cmd = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(tmp / "npm")]
        proc = subprocess.run([*cmd, f"{GITLAB_CI_LOCAL}@{version}"], capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-10:])
            raise SetupError(f"{GITLAB_CI_LOCAL} {version}", f"`npm install` failed:\n{tail}", "check the npm registry")
        (tmp / "bin").mkdir(parents=True, exist_ok=True)
        (tmp / "bin" / GITLAB_CI_LOCAL).symlink_to(Path("..") / "npm" / "node_modules" / ".bin" / GITLAB_CI_LOCAL)
        cache.commit(tmp, entry, [GITLAB_CI_LOCAL], {"package": GITLAB_CI_LOCAL, "version": version})
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return entry / "bin" / GITLAB_CI_LOCAL


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


def groovy_parser() -> list[str]:
    """The command (``java -cp ... GroovyParse``; append a file) that parses a Groovy file (a Jenkinsfile) with the
    pinned Groovy compiler up to semantic analysis: exit 0 and ``parsed <file>``, or exit 1 with Groovy's
    ``startup failed: <file>: <line>: <message>``. The jar comes from Maven Central (`mvn dependency:get`, about a
    minute cold, into ~/.m2), the checker is compiled once into the cache. Raises SetupError without mvn/javac."""
    version = load().ci["groovy"]
    jar = (
        Path.home() / ".m2" / "repository" / "org" / "apache" / "groovy" / "groovy" / version / f"groovy-{version}.jar"
    )
    what = f"groovy {version}"
    for tool in ("mvn", "javac", "java"):
        if shutil.which(tool) is None:
            raise SetupError(what, f"{tool} is not on PATH", "install a JDK (>= 17) and Maven")
    if not jar.is_file():
        artifact = f"-Dartifact=org.apache.groovy:groovy:{version}"
        proc = subprocess.run(
            ["mvn", "-q", "-B", "dependency:get", artifact, "-Dtransitive=false"], capture_output=True, text=True
        )
        if proc.returncode != 0 or not jar.is_file():
            raise SetupError(what, f"`mvn dependency:get` failed:\n{proc.stdout[-1500:]}", "check Maven Central access")
    entry = cache.tool_entry("groovy-parse", version)
    if not (entry / "GroovyParse.class").is_file():
        entry.mkdir(parents=True, exist_ok=True)
        (entry / "GroovyParse.java").write_text(GROOVY_CHECK)
        subprocess.run(["javac", "-cp", str(jar), "-d", str(entry), str(entry / "GroovyParse.java")], check=True)
    return ["java", "-cp", f"{jar}:{entry}", "GroovyParse"]
