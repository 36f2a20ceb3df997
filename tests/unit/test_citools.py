"""The CI-template runners' cache (lab/conformance_lab/toolchain/citools.py): `make test` looks in the cache only
and never downloads (a miss names the setup command); a build step that fails or hangs ends in a SetupError
naming it; the Groovy checker is compiled into a partial directory under the entry's lock and committed whole;
`make setup-all` builds actionlint and the Groovy parser ahead. Breaker s11 finding 9."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conformance_lab.toolchain import cache, citools, setup
from conformance_lab.toolchain.steps import SetupError


@pytest.fixture
def empty(tmp_path, monkeypatch):
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


@pytest.mark.parametrize(
    "lookup", [lambda: citools.go_tool("actionlint", build=False), lambda: citools.groovy_parser(build=False)]
)
def test_a_cache_only_lookup_never_builds_and_names_the_setup_command(empty, monkeypatch, lookup):
    """`make test`'s lookups (``build=False``) on an empty cache: no subprocess runs, the error names both fixes."""
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail(f"ran {a}"))
    with pytest.raises(SetupError, match="not built") as exc:
        lookup()
    assert "dra-conformance setup --all" in str(exc.value) and "make setup-all" in str(exc.value)


def test_a_step_that_hangs_or_fails_is_a_setup_error(monkeypatch):
    """A command past STEP_TIMEOUT_S or with a non-zero exit raises SetupError naming it (not a hang, not a
    CalledProcessError)."""

    def hang(cmd, **kw):
        assert kw["timeout"] == citools.STEP_TIMEOUT_S
        raise subprocess.TimeoutExpired(cmd, kw["timeout"])

    monkeypatch.setattr(subprocess, "run", hang)
    with pytest.raises(SetupError, match=r"`mvn -q -B \.\.\.` did not finish in 300 s"):
        citools._run(["mvn", "-q", "-B", "dependency:get"], "groovy 4", "check Maven Central")
    monkeypatch.undo()
    with pytest.raises(SetupError, match=r"failed \(exit 3\)"):
        citools._run(["sh", "-c", "echo broken; exit 3"], "groovy 4", "fix")


def _fake_tools(monkeypatch, javac_ok: bool = True):
    """mvn writes the jar into ~/.m2; javac writes the class (or fails)."""
    monkeypatch.setattr(citools.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    ran = []

    def run(cmd, what, fix):
        ran.append(cmd[0])
        if cmd[0] == "mvn":
            version = citools.load().ci["groovy"]
            jar = Path.home() / ".m2/repository/org/apache/groovy/groovy" / version / f"groovy-{version}.jar"
            jar.parent.mkdir(parents=True)
            jar.write_bytes(b"jar")
        elif javac_ok:
            Path(cmd[cmd.index("-d") + 1], citools.CLASS).write_bytes(b"class")
        else:
            raise SetupError(what, "javac failed", fix)

    monkeypatch.setattr(citools, "_run", run)
    return ran


def test_the_groovy_checker_is_committed_whole_and_found_cached(empty, monkeypatch):
    """First use downloads and compiles once into a trusted entry; the next lookup (cache only) finds it."""
    ran = _fake_tools(monkeypatch)
    cmd = citools.groovy_parser()
    entry = cache.tool_entry("groovy-parse", citools.load().ci["groovy"])
    assert ran == ["mvn", "javac"] and cache.is_complete(entry, [citools.CLASS])
    assert cmd[-1] == "GroovyParse" and f"{entry / 'bin'}" in cmd[2]
    assert citools.groovy_parser(build=False) == cmd and ran == ["mvn", "javac"]
    assert (entry.parent / f".{entry.name}.lock").is_file()  # built under the entry's lock


def test_a_failed_compile_leaves_no_entry_and_no_partial(empty, monkeypatch):
    """javac failing: SetupError, no trusted entry, no half-written partial directory for another run to read."""
    _fake_tools(monkeypatch, javac_ok=False)
    with pytest.raises(SetupError, match="javac failed"):
        citools.groovy_parser()
    entry = cache.tool_entry("groovy-parse", citools.load().ci["groovy"])
    assert not entry.exists() and not list(entry.parent.glob(entry.name + ".partial-*"))


def test_setup_all_builds_the_ci_checks_of_make_test_ahead(empty, monkeypatch):
    """`make setup-all` plans actionlint and the Groovy parser (not `make setup`); without a JDK the Groovy step
    says what is missing instead of failing the setup."""
    names = [s.name for s in setup.setup_steps(None, {"debian", "npm", "images", "kind"}, "all")]
    actionlint = citools.load().ci_tools["actionlint"]
    assert f"actionlint {actionlint.version}" in names and "groovy parser" in names
    main = [s.name for s in setup.setup_steps(None, {"debian", "npm", "images"}, "main")]
    assert not any("actionlint" in n or "groovy" in n for n in main)
    monkeypatch.setattr(citools.shutil, "which", lambda tool: None)
    assert citools.setup_groovy().startswith("left out: mvn, javac, java not on PATH")
