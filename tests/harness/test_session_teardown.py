"""Session.teardown when Ctrl-C (KeyboardInterrupt) lands in one of its steps: only that step is cut short, the
sweep requests the remaining deletions without waiting, the rest still runs and ``interrupted`` is set (the
plugin then ends the run with exit 2). Steps are stand-ins here; tests/e2e/test_harness_run.py and
test_harness_interrupt.py interrupt real runs."""

from conformance.core.config import from_options
from conformance.k8s import sweep
from conformance.runner.session import STATE_FILE, Session
from tests.harness.test_registry import shipped


class Step:
    """A driver deployer / cluster provider stand-in that records its call and may raise."""

    def __init__(self, log, name, raises=None):
        self.log, self.name, self.raises = log, name, raises

    def teardown(self):
        self.log.append(self.name)
        if self.raises:
            raise self.raises

    down = teardown


def _session(tmp_path, log, driver_raises=None):
    cfg = from_options({"driver": "reference", "run_id": "r1", "report_dir": str(tmp_path)})
    s = Session(cfg, tmp_path, shipped())
    s.k8s, s.deployer, s.cluster_provider = object(), Step(log, "driver", driver_raises), Step(log, "cluster")
    (tmp_path / STATE_FILE).write_text("{}")
    return s


def test_ctrl_c_in_the_sweep_requests_deletions_and_still_removes_driver_and_cluster(monkeypatch, tmp_path):
    log = []

    def swept_until_ctrl_c(k8s, run_id, **_):
        log.append("sweep")
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "sweep_run", swept_until_ctrl_c)
    monkeypatch.setattr(sweep, "request_deletion", lambda k8s, run_id: log.append("request") or ["Namespace n"])
    s = _session(tmp_path, log)
    problems = s.teardown()
    assert log == ["sweep", "request", "driver", "cluster"] and s.interrupted
    assert len(problems) == 1 and "interrupted (Ctrl-C)" in problems[0] and "Namespace n" in problems[0], problems
    assert not (tmp_path / STATE_FILE).exists()


def test_ctrl_c_in_the_driver_removal_still_stops_the_cluster(monkeypatch, tmp_path):
    log = []
    monkeypatch.setattr(sweep, "sweep_run", lambda k8s, run_id, **_: log.append("sweep") or [])
    s = _session(tmp_path, log, driver_raises=KeyboardInterrupt())
    problems = s.teardown()
    assert log == ["sweep", "driver", "cluster"] and s.interrupted
    assert problems == ["driver teardown failed: KeyboardInterrupt"], problems


def test_a_teardown_without_ctrl_c_is_not_interrupted(monkeypatch, tmp_path):
    log = []
    monkeypatch.setattr(sweep, "sweep_run", lambda k8s, run_id, **_: log.append("sweep") or [])
    s = _session(tmp_path, log)
    assert s.teardown() == [] and not s.interrupted and log == ["sweep", "driver", "cluster"]


def test_a_403_in_setup_is_torn_down_and_names_preflight_as_the_fix(monkeypatch, tmp_path):
    """s16 new-user F1: `run` against a user the API server refuses (403 on GET /api/v1/nodes) printed the bare
    'Forbidden: ...' with no fix."""
    import pytest  # noqa: PLC0415

    from conformance.core import errors  # noqa: PLC0415

    log = []
    s = _session(tmp_path, log)

    def refused():
        raise errors.Forbidden(403, "Forbidden", "nodes is forbidden", request="GET /api/v1/nodes")

    provider = type("P", (), {"up": staticmethod(refused), "down": staticmethod(lambda: None)})()
    monkeypatch.setattr(s, "_provider", lambda: provider)
    monkeypatch.setattr(s, "teardown", lambda: log.append("teardown") or [])
    with pytest.raises(errors.ClusterUnavailable, match=r"lacks a permission .*GET /api/v1/nodes: 403") as info:
        s.setup()
    assert "dra-conformance preflight" in str(info.value) and log == ["teardown"]
