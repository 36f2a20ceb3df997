"""The lab's cluster faults repair what they broke, and the fault point hands a test over at known moments
(issue 27 §2). Real pytest child for the fault point; fakes only for the processes a fault stops."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from conformance_lab.local import cluster_faults as cf
from conformance_tools import faultpoint


class _Proc:
    def __init__(self, log: list) -> None:
        self.log = log

    def stop(self, timeout: float = 10.0, graceful: bool = True) -> None:
        self.log.append("stop" if graceful else "kill")

    def restart(self):
        self.log.append("restart")
        return self


class _State:
    name = "fake"

    def __init__(self, log: list) -> None:
        self.proc, self.log = _Proc(log), log

    def process(self, name: str):
        return self.proc if name in ("etcd", "kube-scheduler") else None

    def save(self) -> None:
        self.log.append("save")


def test_a_stopped_component_is_started_again_even_when_the_body_fails(monkeypatch):
    log: list = []
    monkeypatch.setattr(cf, "wait_ready", lambda api, timeout=cf.READY_TIMEOUT: log.append("ready"))
    with pytest.raises(RuntimeError), cf.component_stopped(_State(log), object(), "etcd"):
        log.append("body")
        raise RuntimeError("the body failed")
    assert log == ["stop", "body", "restart", "save", "ready"], log
    log.clear()
    with cf.component_stopped(_State(log), object(), "kube-scheduler", crash=True):  # as a panic: SIGKILL
        log.append("body")
    assert log == ["kill", "body", "restart", "save", "ready"], log
    with (
        pytest.raises(KeyError, match="no kube-apiserver recorded"),
        cf.component_stopped(_State([]), None, "kube-apiserver"),
    ):
        pass


def test_the_fault_point_waits_for_go_before_the_body_and_for_restored_before_teardown(tmp_path):
    (tmp_path / "test_t.py").write_text(
        "import pathlib\n"
        "def test_other():\n    pass\n"
        "def test_target():\n"
        f"    here = pathlib.Path({str(tmp_path)!r})\n"
        "    (here / 'body').write_text(str((here / 'go').exists()))\n"
    )
    seen: list[str] = []

    def injector() -> None:
        for mine, theirs in ((faultpoint.STARTED, faultpoint.GO), (faultpoint.ENDED, faultpoint.RESTORED)):
            assert faultpoint.wait_file(tmp_path / mine, 60)
            seen.append(mine + (" after the body" if (tmp_path / "body").exists() else " before the body"))
            (tmp_path / theirs).write_text("")

    helper = threading.Thread(target=injector)
    helper.start()
    env = {**os.environ, "DRA_FAULTPOINT_TEST": "test_target", "DRA_FAULTPOINT_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conformance_tools.faultpoint",
         str(tmp_path / "test_t.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    helper.join(timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert seen == ["started before the body", "ended after the body"], seen
    assert (tmp_path / "body").read_text() == "True"  # the body ran after go
