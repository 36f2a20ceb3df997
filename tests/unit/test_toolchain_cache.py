"""The binary cache never trusts a partial entry; setup errors name the step and the fix."""

import pytest
from conformance_lab.toolchain import cache, gobuild
from conformance_lab.toolchain.steps import SetupError, Step, run_steps
from conformance_lab.toolchain.versions import GoTool


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path / "cache"))


def test_entry_is_trusted_only_after_commit(tmp_path):
    entry = cache.tool_entry("demo", "v1")
    tmp = cache.partial_dir(entry)
    (tmp / "bin" / "demo").write_bytes(b"x" * 10)
    assert not cache.is_complete(entry, ["demo"])
    cache.commit(tmp, entry, ["demo"], {"version": "v1"})
    assert cache.is_complete(entry, ["demo"])
    (entry / "bin" / "demo").write_bytes(b"truncated")
    assert not cache.is_complete(entry, ["demo"]), "a binary whose size changed must not be trusted"


def test_commit_refuses_a_build_missing_a_binary():
    entry = cache.tool_entry("demo", "v2")
    tmp = cache.partial_dir(entry)
    with pytest.raises(FileNotFoundError, match="did not produce demo"):
        cache.commit(tmp, entry, ["demo"], {})
    assert not entry.exists()


def test_partial_dirs_of_earlier_runs_are_removed():
    entry = cache.tool_entry("demo", "v3")
    stale = entry.parent / f"{entry.name}.partial-1"
    stale.mkdir(parents=True)
    cache.partial_dir(entry)
    assert not stale.exists()


def test_cache_miss_names_the_setup_command():
    with pytest.raises(cache.CacheMiss, match=r"make setup K8S_VERSION=1.35"):
        cache.k8s_binary("kubelet", "v1.35.4")


def test_unreachable_registry_fails_with_step_and_fix_and_leaves_no_entry(tmp_path, monkeypatch):
    """GOPROXY=off makes every module fetch fail at once, like an unreachable proxy."""
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOMODCACHE", str(tmp_path / "empty-modcache"))
    monkeypatch.setenv("GOFLAGS", "")
    tool = GoTool(
        name="nosuch",
        module="example.invalid/nosuch",
        version="v0.0.1",
        packages=("example.invalid/nosuch",),
        binaries=("nosuch",),
    )
    with pytest.raises(SetupError) as err:
        gobuild.build_tool(tool, tmp_path / "log.txt")
    assert "nosuch v0.0.1" in err.value.step
    assert "re-run `make setup`" in err.value.fix
    entry = cache.tool_entry("nosuch", "v0.0.1")
    assert not entry.exists() and not list(entry.parent.glob("nosuch-v0.0.1.partial-*"))


def test_run_steps_reports_each_step_with_timing(capsys):
    run_steps([Step("first", lambda: "ok"), Step("second", lambda: "cached")])
    out = capsys.readouterr().out
    assert "[1/2] first: ok (" in out and "[2/2] second: cached (" in out and "all 2 steps done" in out


def test_run_steps_wraps_unexpected_errors_with_the_step_name():
    def boom():
        raise OSError("disk full")

    with pytest.raises(SetupError, match="setup step 'writer' failed: OSError: disk full"):
        run_steps([Step("writer", boom)])


def test_changed_build_fingerprint_invalidates_the_entry():
    entry = cache.tool_entry("demo", "v4")
    tmp = cache.partial_dir(entry)
    (tmp / "bin" / "demo").write_bytes(b"x")
    cache.commit(tmp, entry, ["demo"], {"fingerprint": "aaa"})
    assert cache.is_complete(entry, ["demo"], "aaa")
    assert not cache.is_complete(entry, ["demo"], "bbb"), "new ldflags or version must rebuild"


def test_fingerprint_follows_ldflags():
    base = GoTool(name="t", module="m", version="v1", packages=("m",), binaries=("t",))
    other = GoTool(name="t", module="m", version="v1", packages=("m",), binaries=("t",), ldflags="-X a.b=c")
    assert gobuild.fingerprint(base) != gobuild.fingerprint(other)


def test_the_go_command_time_limit_can_be_raised_for_a_slow_build(monkeypatch):
    monkeypatch.delenv("DRA_CONFORMANCE_GO_TIMEOUT_S", raising=False)
    assert gobuild.go_timeout_s() == gobuild.GO_TIMEOUT_S
    monkeypatch.setenv("DRA_CONFORMANCE_GO_TIMEOUT_S", "7200")
    assert gobuild.go_timeout_s() == 7200
    for bad in ("0", "-5", "1h"):
        monkeypatch.setenv("DRA_CONFORMANCE_GO_TIMEOUT_S", bad)
        with pytest.raises(SetupError, match="DRA_CONFORMANCE_GO_TIMEOUT_S"):
            gobuild.go_timeout_s()
