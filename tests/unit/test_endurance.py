"""The soak / multi-cluster tools' pure parts (conformance_tools.endurance): verdicts compared without timings,
the table, growth lines, the run's cluster, a child past its timeout."""

import json
import subprocess
import sys
import time

from conformance_tools.endurance import lab, probes, soak

VERDICT = (
    "VERDICT: PASS (outside profile core: api_v1, prioritized_list, admin_access, podresources) - driver reference, "
    "profile core: 10 passed, 0 failed, 0 errors, 0 skipped in 66s (run r20261205-1824-89ef, /tmp/r/summary.md)"
)


def test_verdict_of_takes_the_last_verdict_line_without_time_run_id_or_report():
    out = f"noise\nVERDICT: FAIL - x in 3s (run r1, a/summary.md)\n{VERDICT}\ntrailing\n"
    assert lab.verdict_of(out) == (
        "VERDICT: PASS (outside profile core: api_v1, prioritized_list, admin_access, podresources) - driver "
        "reference, profile core: 10 passed, 0 failed, 0 errors, 0 skipped"
    )
    assert lab.verdict_of("no verdict here") == ""


def _row(run, code=0, verdict="VERDICT: PASS - x", rss=100.0, fds=50, objects=None, host=None):
    mem = {"kube-apiserver": rss, "kubelet": 80.0, "containerd": 40.0}
    use = probes.Usage(mem, {p: fds for p in probes.PROCESSES}, [])
    outcome = lab.Outcome(code, verdict, 61.4, lab.Path("r"))
    return soak.Row(run, "c1", outcome, use, objects or {"Namespace": 5, "runs left": 0}, host or {})


def test_identical_needs_one_verdict_and_every_exit_zero():
    assert soak.identical([_row(1), _row(2)])
    assert not soak.identical([_row(1), _row(2, verdict="VERDICT: FAIL - x")])
    assert not soak.identical([_row(1), _row(2, code=1)])
    assert not soak.identical([])


def test_render_row_and_growth_name_first_and_last():
    line = soak.render_row(_row(3, host={"processes": 2}))
    assert line.split()[:5] == ["3", "0", "61", "100.0", "50/50/50"] and "5/-/-/-/-/0" in line and " 2 " in line
    lines = soak.growth([_row(1), _row(2, rss=130.5, fds=57, objects={"Namespace": 6, "runs left": 1})])
    assert lines[0] == "growth run 1 -> run 2:"
    assert "  kube-apiserver: RSS 100.0 -> 130.5 MiB, fds 50 -> 57" in lines
    assert "  objects: Namespace 5 -> 6, runs left 0 -> 1" in lines
    assert soak.growth([_row(1)]) == ["growth: fewer than two measured runs"]


def test_render_row_without_figures_shows_dashes():
    row = soak.Row(1, "", lab.Outcome(3, "", 5.0, lab.Path("r")), None, {}, {})
    assert "(no verdict line)" in soak.render_row(row) and " - " in soak.render_row(row)


def test_cluster_of_run_is_the_local_provider_s_name_of_the_run_id(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"run_id": "r20261205-1824-89ef"}))
    assert lab.cluster_of_run(tmp_path) == "c89ef"
    assert lab.cluster_of_run(tmp_path / "missing") == ""


def test_a_child_past_its_timeout_is_stopped_with_124(tmp_path):
    log = tmp_path / "c.log"
    log.write_text("")
    # the child's SIGINT at its default from its start, as lab.spawn does: a test run started in the background of
    # a shell without job control inherits it ignored, and the child would then sleep through the stop
    quiet = lab._default_sigint
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], preexec_fn=quiet)  # noqa: PLW1509
    start = time.monotonic()
    [(code, _text, _took)] = lab.wait_all([lab.Child(proc, log, start)], timeout_s=0.5)
    assert code == 124 and proc.poll() is not None and time.monotonic() - start < 30


def test_usage_sums_the_recorded_processes(monkeypatch):
    from conformance_lab.local.processes import HostProcess

    procs = [
        HostProcess("kube-apiserver", "", 11, None, lab.Path("l"), []),
        HostProcess("kubelet", "n0", 12, None, lab.Path("l"), []),
        HostProcess("kubelet", "n1", 13, None, lab.Path("l"), []),
        HostProcess("etcd", "", 14, None, lab.Path("l"), []),
    ]
    state = type("S", (), {"processes": procs})()
    monkeypatch.setattr(probes.ClusterState, "load", classmethod(lambda cls, name: state))
    monkeypatch.setattr(HostProcess, "is_running", lambda self: self.pid != 13)
    monkeypatch.setattr(probes, "rss_kib", lambda pid: 2048 * pid)
    monkeypatch.setattr(probes, "fd_count", lambda pid: pid)
    use = probes.usage("c1")
    assert use.rss_mib == {"kube-apiserver": 22.0, "kubelet": 24.0}
    assert use.fds == {"kube-apiserver": 11, "kubelet": 12}
    assert use.missing == ["kubelet@n1"]
