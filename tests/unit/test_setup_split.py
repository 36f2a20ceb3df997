"""`make setup` plans only what the main job needs, `make setup-all` everything; a tool left out is built on first
use with a progress line (issue 26 §3); downloads run beside the builds; one `go build` per tool."""

from __future__ import annotations

import json
import threading

import pytest
from conformance_lab.toolchain import cache, firstuse, gobuild, setup
from conformance_lab.toolchain.steps import SetupError, Step, run_steps
from conformance_lab.toolchain.versions import load


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(firstuse.ENV, raising=False)
    return tmp_path / "cache"


def _names(scope, skip=()):
    return [s.name.split(" ")[0] for s in setup.setup_steps(None, set(skip), scope)]


def test_make_setup_plans_only_what_the_main_job_needs(empty_cache):
    names = _names("main")
    assert names == ["python", "gRPC", "debian", "allure", "kubernetes", "etcd", "containerd", "offline"]
    for other in ("kwok", "kind", "helm", "registry", "dranet", "dra-example-driver", "coredns", "crictl"):
        assert other not in names


def test_make_setup_all_plans_every_pinned_tool_every_image_and_the_kind_node_image(empty_cache):
    pins = load()
    names = _names("all")
    for tool in [*pins.go_tools, *pins.kind_tools]:
        on_use_only = tool in pins.go_tools and pins.go_tools[tool].on_use_only
        assert (tool in names) != on_use_only, tool  # old releases and dra-driver-cpu: only on first use
    assert {t for t, v in pins.go_tools.items() if v.on_use_only} >= {"dra-example-driver-v0.1.0", "dra-driver-cpu"}
    assert names[-1] == "kind" and "offline" in names
    assert "kind" not in _names("all", {"kind"})[-1:]  # KIND= skips only the node image
    with pytest.raises(ValueError, match="unknown setup scope 'most'"):
        setup.setup_steps(None, set(), "most")


def test_setup_downloads_in_the_background_and_builds_after_their_prefetch(empty_cache):
    steps = {s.name.split(" ")[0]: s for s in setup.setup_steps(None, set(), "main")}
    assert steps["debian"].background and steps["allure"].background
    assert all(steps[n].prefetch is not None for n in ("kubernetes", "etcd", "containerd"))
    assert steps["offline"].needs == ("debian packages",)  # busybox-static comes from Debian


def test_run_steps_runs_prefetches_beside_the_builds_and_passes_their_result(capsys):
    fetched = threading.Event()
    order = []

    def prefetch():
        fetched.set()
        return "modules"

    def build(prepared):
        order.append(("build", prepared))
        return "built"

    def bg():
        assert fetched.wait(5)  # the prefetch of a later step ran at the same time
        order.append("bg")
        return "installed"

    run_steps([Step("apt", bg, background=True), Step("tool", build, prefetch=prefetch, needs=("apt",))])
    out = capsys.readouterr().out
    assert order == ["bg", ("build", "modules")]
    assert "[1/2] apt: installed" in out and "in the background" in out
    assert "[2/2] tool: downloads done" in out and "[2/2] tool: built" in out


def test_a_failed_background_step_fails_setup_naming_it():
    def broken():
        raise OSError("archive unreachable")

    with pytest.raises(SetupError, match="setup step 'apt' failed: OSError: archive unreachable"):
        run_steps([Step("apt", broken, background=True), Step("build", lambda: "ok")])


def test_exe_names_follow_go_build_and_one_invocation_builds_all(tmp_path, monkeypatch):
    assert gobuild.exe_name("go.etcd.io/etcd/server/v3") == "server"
    assert gobuild.exe_name("k8s.io/kubernetes/test/e2e/dra/test-driver") == "test-driver"
    assert gobuild.exe_name("sigs.k8s.io/kind") == "kind"
    calls = []

    def fake_go(args, cwd, what, log, env=None):
        calls.append(args)
        outdir = args[args.index("-o") + 1]
        for pkg in args[args.index("-o") + 2 :]:
            (tmp_path / "bin" / ".go-build-out" / gobuild.exe_name(pkg)).write_text(pkg)
        assert outdir.endswith("/")
        return ""

    monkeypatch.setattr(gobuild, "run_go", fake_go)
    pkgs = ["go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/etcdctl/v3"]
    gobuild.build_packages(tmp_path, pkgs, ["etcd", "etcdctl"], tmp_path / "bin", "", "", "etcd", tmp_path / "l")
    assert len(calls) == 1
    assert (tmp_path / "bin" / "etcd").read_text() == pkgs[0] and (tmp_path / "bin" / "etcdctl").is_file()
    assert not (tmp_path / "bin" / ".go-build-out").exists()


def _fake_build(calls):
    def build_tool(tool, log, force=False, prepared=None):
        calls.append(tool.name)
        tmp = cache.partial_dir(cache.tool_entry(tool.name, tool.version))
        for b in tool.binaries:
            (tmp / "bin" / b).write_text("#!/bin/sh\n")
        info = {"module": tool.module, "version": tool.version, "fingerprint": gobuild.fingerprint(tool)}
        cache.commit(tmp, cache.tool_entry(tool.name, tool.version), tool.binaries, info)
        return cache.tool_entry(tool.name, tool.version) / "bin"

    return build_tool


def test_a_tool_setup_left_out_is_built_on_first_use_with_a_progress_line(empty_cache, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(gobuild, "build_tool", _fake_build(calls))
    helm = load().go_tools["helm"]
    path = firstuse.tool_binary("helm")
    assert path == cache.tool_entry("helm", helm.version) / "bin" / "helm" and path.is_file()
    err = capsys.readouterr().err
    assert (
        f"building helm {helm.version} (first use, up to ~2 min; `dra-conformance setup --all` (`make setup-all` in a "
        "checkout) builds everything ahead)..."
    ) in err
    assert f"built helm {helm.version} in " in err
    assert firstuse.tool_binary("helm") == path and calls == ["helm"]  # cached now: built once
    assert json.loads((path.parents[1] / cache.MANIFEST).read_text())["fingerprint"] == gobuild.fingerprint(helm)


def test_first_use_builds_can_be_turned_off_and_failures_name_the_fix(empty_cache, monkeypatch):
    monkeypatch.setenv(firstuse.ENV, "0")
    with pytest.raises(
        cache.CacheMiss,
        match=r"kwok v\S+ is not built and DRA_CONFORMANCE_BUILD_ON_USE=0; unset DRA_CONFORMANCE_BUILD_ON_USE and "
        r"re-run, or run `dra-conformance setup --all` \(`make setup-all` in a checkout\)",
    ):
        firstuse.tool_binary("kwok")
    monkeypatch.delenv(firstuse.ENV)

    def broken(tool, log, force=False, prepared=None):
        raise SetupError("kwok", "`go mod tidy` failed: dial tcp: no such host", "check the network")

    monkeypatch.setattr(gobuild, "build_tool", broken)
    with pytest.raises(cache.CacheMiss, match="kwok .* could not be built on first use: .*no such host"):
        firstuse.tool_binary("kwok")
    with pytest.raises(cache.CacheMiss, match="no Go tool 'nope'"):
        firstuse.tool_binary("nope")


def test_the_lab_locator_builds_on_first_use_and_answers_none_when_it_cannot(empty_cache, monkeypatch, capsys):
    from conformance_lab.locator import LOCATOR

    calls = []
    monkeypatch.setattr(gobuild, "build_tool", _fake_build(calls))
    assert LOCATOR.program("helm").name == "helm" and calls == ["helm"]
    assert "first use" in capsys.readouterr().err
    monkeypatch.setenv(firstuse.ENV, "0")
    assert LOCATOR.program("kwok") is None  # the plugin then falls back to $DRA_CONFORMANCE_KWOK and PATH


def test_prefetch_downloads_every_planned_build_and_leaves_failures_to_setup(empty_cache, monkeypatch, capsys):
    from conformance_lab.toolchain import k8s

    fetched = []
    monkeypatch.setattr(k8s, "prepare", lambda tag, log: fetched.append(tag))

    def prepare_tool(tool, log):
        if tool.name == "containerd":
            raise SetupError("containerd", "`go mod tidy` failed: dial tcp: i/o timeout", "check the network")
        fetched.append(tool.name)

    monkeypatch.setattr(gobuild, "prepare_tool", prepare_tool)
    assert setup.prefetch(None, "main") == 1
    assert sorted(fetched) == sorted([load().k8s_tag(None), "etcd"])
    out = capsys.readouterr().out
    assert "[prefetch] etcd " in out and "modules downloaded" in out
    assert "containerd" in out and "failed (SetupError; `setup` retries it)" in out


def test_an_on_use_only_tool_says_its_long_build_and_never_names_setup_all(empty_cache, monkeypatch, capsys):
    """A tool `setup --all` leaves out (old driver releases, dra-driver-cpu): the progress line takes the minutes
    from versions.toml ``build_minutes`` and a failure does not send a user to a setup that would not build it
    (breaker s11 finding 11)."""
    cpu = load().go_tools["dra-driver-cpu"]
    assert cpu.on_use_only and cpu.build_minutes >= 10
    monkeypatch.setattr(gobuild, "build_tool", _fake_build([]))
    firstuse.tool_binary("dra-driver-cpu")
    err = capsys.readouterr().err
    assert (
        f"building dra-driver-cpu {cpu.version} (first use, up to ~{cpu.build_minutes} min; it is left to first use)"
        in err
    )

    def broken(tool, log, force=False, prepared=None):
        raise SetupError("dra-example-driver", "`go build` failed", "read the log")

    monkeypatch.setattr(gobuild, "build_tool", broken)
    with pytest.raises(cache.CacheMiss, match=r"re-run \(it is built on first use only") as exc:
        firstuse.build("dra-example-driver-v0.1.0")
    assert "setup-all" not in str(exc.value)
