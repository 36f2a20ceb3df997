"""Unit tests of the visibility probe without a cluster: the end marker's script (run by the local ``sh``) and
parsing, the "probe did not run" error, and the Probe's judgements over fake pods/log answers: a check waits
for the marker, never passes on an empty or cut-off output, and names devices instead of counting them."""

import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.core import errors, probe_marker, timeouts
from conformance.core.errors import ProbeCommandFailed, ProbeDidNotRun
from conformance.core.objects import Obj
from conformance.core.profile import Visibility
from conformance.node.probe import Probe, container_claims

END = probe_marker.END


def _sh(command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["sh", "-c", probe_marker.script(command, then_sleep=False)], capture_output=True, text=True, check=False
    )


# -- the marker ----------------------------------------------------------------------------------------
def test_script_prints_the_marker_with_the_commands_status_after_its_output():
    done = _sh("echo GPU_DEVICE_0=gpu-0; printf 'no newline'")
    run = probe_marker.parse(done.stdout)
    assert done.returncode == 0 and run.rc == 0 and run.ended
    assert run.output == "GPU_DEVICE_0=gpu-0\nno newline\n"


@pytest.mark.parametrize(
    "command, rc, missing", [("exit 3", 3, False), ("false", 1, False), ("no-such-probe-command", 127, True)]
)
def test_script_reports_a_failing_or_missing_command_and_exits_with_it(command, rc, missing):
    done = _sh(command)
    run = probe_marker.parse(done.stdout)
    assert (run.rc, done.returncode, run.command_missing) == (rc, rc, missing), done


def _children(pid: int, name: str) -> list[str]:
    return subprocess.run(["pgrep", "-P", str(pid), name], capture_output=True, text=True).stdout.split()


def _stopped(stat: Path) -> str:
    """'gone', 'Z' (zombie), or '' while the process still runs."""
    try:
        state = stat.read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"
    return state if state == "Z" else ""


def _poll(look, timeout_s: float = 10.0):
    """The first truthy answer of ``look()`` within ``timeout_s`` (a loaded machine may be slow), else the last."""
    deadline = time.monotonic() + timeout_s
    while not (answer := look()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return answer


def test_sleeping_script_keeps_running_then_exits_at_once_on_sigterm():
    """The container stays up after the marker and stops on SIGTERM (a pod deletion) without waiting for
    SIGKILL at the end of the grace period."""
    proc = subprocess.Popen(["sh", "-c", probe_marker.script("echo X=1")], stdout=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[-1].startswith(f"{END} rc=0") and proc.poll() is None, lines
        sleeper = _poll(lambda: _children(proc.pid, "sleep"))  # the shell forks the sleep after the marker
        proc.terminate()
        assert proc.wait(timeout=5) == 0 and len(sleeper) == 1, sleeper
        stat = Path(f"/proc/{sleeper[0]}/stat")
        state = _poll(lambda: _stopped(stat))
        assert state in ("gone", "Z"), state  # the sleep went with the shell (outside a container too)
    finally:
        proc.kill()
        proc.wait()


def test_sleeping_script_sleeps_until_sigterm_and_empty_command_is_refused():
    assert probe_marker.script("env").endswith("sleep 100000 &\nwait\n")
    assert probe_marker.script("ls /dev/dri").startswith("(\nls /dev/dri\n)\n")
    with pytest.raises(ValueError, match="visibility.command"):
        probe_marker.script("  ")


@pytest.mark.parametrize(
    "text, output, rc",
    [
        ("", "", None),
        ("GPU_DEVICE_0=gpu-0\n", "GPU_DEVICE_0=gpu-0\n", None),  # cut off before the marker
        (f"\n{END} rc=0\n", "", 0),  # ran, printed nothing
        (f"A=1\n\n{END} rc=2\n", "A=1\n", 2),
        (f"A=1\r\n\r\n{END} rc=0\r\n", "A=1\r\n\r\n", 0),
        (f"A=1\n{END} rc=\n", f"A=1\n{END} rc=\n", None),  # no status: not the marker
        (f"x {END} rc=0\n", f"x {END} rc=0\n", None),  # not at a line start
    ],
)
def test_parse_splits_at_the_marker_line_only(text, output, rc):
    run = probe_marker.parse(text)
    assert (run.output, run.rc, run.ended) == (output, rc, rc is not None)


def test_probe_did_not_run_names_pod_container_command_and_output():
    err = ProbeDidNotRun("ns/p", "ctr", "nvidia-smi -L", "the command failed (exit status 9)", "No devices", 9)
    text = str(err)
    assert isinstance(err, errors.ConformanceError) and err.rc == 9
    for fragment in ("ns/p", "'ctr'", "'nvidia-smi -L'", "exit status 9", "output tail:\nNo devices"):
        assert fragment in text, text
    assert "(empty)" in str(ProbeDidNotRun("ns/p", "ctr", "env", "no end marker within 60s"))


# -- the Probe over fake API answers --------------------------------------------------------------------
@pytest.fixture
def short_waits():
    timeouts.set_scale(0.02)  # PROBE_OUTPUT 60 s -> 1.2 s
    yield
    timeouts.set_scale(1)


def _ended(*lines: str, rc: int = 0) -> str:
    return "".join(line + "\n" for line in lines) + f"\n{END} rc={rc}\n"


class _K8s:
    """pods/log answers per container, one pod (``status`` per container) and its claims."""

    def __init__(self, logs: dict, pod: dict | None = None, claims: dict | None = None, fail: bool = False):
        self.log_text, self.fail, self.reads = logs, fail, 0
        self.pod = pod or {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": _spec()}
        self.claims = claims or {}

    def logs(self, pod, container=None, retry=True):
        self.reads += 1
        if self.fail:
            raise errors.ApiError(502, "BadGateway", "kubelet unreachable", {}, "GET")
        return self.log_text[container]

    def get(self, kind, name, namespace):
        return Obj(self.pod) if kind == "Pod" else Obj(self.claims[name])


def _spec(*containers, claims=(), init=()):
    return {
        "nodeName": "n1",
        "containers": list(containers) or [{"name": "ctr"}],
        "initContainers": list(init),
        "resourceClaims": list(claims),
    }


def _ctr(name, *refs):
    return {"name": name, "resources": {"claims": [{"name": c, **({"request": r} if r else {})} for c, r in refs]}}


def _claim(name, *results, driver="d"):
    res = [{"driver": driver, "pool": "n1", "device": dev, "request": req} for req, dev in results]
    return {"metadata": {"name": name}, "status": {"allocation": {"devices": {"results": res}}}}


def _pod(spec, statuses=()):
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": spec, "status": dict(statuses)}


_INVENTORY = SimpleNamespace(driver="d", names_on=lambda node: {"n1": ["gpu-0", "gpu-1", "gpu-2"]}.get(node, []))
_POD = Obj({"metadata": {"name": "p", "namespace": "ns"}})


def _profile(regex=r"^GPU_DEVICE_\d+=\S+$"):
    return SimpleNamespace(
        visibility=Visibility(env_regex=regex), opaque_shows_as="^OPAQUE=", admin_access_signal="^ADMIN="
    )


def _probe(k8s, regex=r"^GPU_DEVICE_\d+=\S+$", access=None):
    return Probe(k8s, _profile(regex), access, _INVENTORY)


def test_empty_log_of_a_running_container_is_never_a_pass(short_waits):
    probe = _probe(_K8s({"ctr": ""}))
    for check in (probe.shows_no_device, probe.shows_config, probe.shows_admin_access, probe.sees):
        with pytest.raises(ProbeDidNotRun, match="no end marker within 1s"):
            check(_POD)
    assert probe.k8s.reads > 2  # it polled the log, not one read


def test_container_that_exited_without_the_marker_fails_at_once():
    status = {"containerStatuses": [{"name": "ctr", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}
    probe = _probe(_K8s({"ctr": "partial"}, pod=_pod(_spec(), status)))
    with pytest.raises(ProbeDidNotRun, match=r"exited with 1 \(Error\) without the end marker(.|\n)*partial"):
        probe.shows_no_device(_POD)


def test_failing_command_is_an_error_except_for_a_no_device_check():
    probe = _probe(_K8s({"ctr": _ended("ls: /dev/dri: No such file or directory", rc=1)}))
    with pytest.raises(ProbeCommandFailed, match=r"the command failed \(exit status 1\)"):
        probe.shows_config(_POD)  # ran in the claim's container and failed: the driver's (s15 breaker C2)
    shown, evidence = probe.shows_no_device(_POD)
    assert shown and "exited 1" in evidence
    missing = _probe(_K8s({"ctr": _ended("sh: nvidia-smi: not found", rc=127)}))
    with pytest.raises(ProbeDidNotRun, match="could not be run by sh") as raised:
        missing.shows_no_device(_POD)
    assert not isinstance(raised.value, ProbeCommandFailed)  # the profile's image lacks the command: not the driver


def test_no_device_check_fails_when_a_device_is_shown():
    probe = _probe(_K8s({"ctr": _ended("GPU_DEVICE_0=gpu-0", "OPAQUE=1")}))
    shown, evidence = probe.shows_no_device(_POD)
    assert not shown and "GPU_DEVICE_0=gpu-0" in evidence
    assert probe.shows_config(_POD) and not probe.shows_admin_access(_POD) and probe.sees(_POD)[0]


def test_shows_devices_names_them_and_refuses_other_lines():
    probe = _probe(_K8s({"ctr": _ended("GPU_DEVICE_0=gpu-0", "GPU_DEVICE_1=gpu-1", "GPU_DEVICE_9=elsewhere")}))
    ok, evidence = probe.shows_devices(_POD, ["gpu-0", "gpu-1"], ["gpu-0", "gpu-1", "gpu-2"])
    assert not ok and "naming no device of this node ['GPU_DEVICE_9=elsewhere']" in evidence
    two = _probe(_K8s({"ctr": _ended("GPU_DEVICE_0=gpu-0", "GPU_DEVICE_1=gpu-10")}))
    assert not two.shows_devices(_POD, ["gpu-0", "gpu-1"], ["gpu-0", "gpu-1", "gpu-10"])  # gpu-1 is not gpu-10


def test_claimed_devices_of_whole_claims_requests_templates_and_none():
    spec = _spec(
        _ctr("all", ("c0", None), ("c1", None)),
        _ctr("first", ("c0", "first")),
        _ctr("second", ("c0", "second")),
        _ctr("none"),
        claims=[{"name": "c0", "resourceClaimName": "x"}, {"name": "c1", "resourceClaimTemplateName": "t"}],
    )
    pod = _pod(spec, {"resourceClaimStatuses": [{"name": "c1", "resourceClaimName": "p-c1-abc"}]})
    claims = {
        "x": _claim("x", ("first", "gpu-0"), ("second/one", "gpu-1")),
        "p-c1-abc": _claim("p-c1-abc", ("device", "gpu-2")),
    }
    logs = {
        "all": _ended("GPU_DEVICE_0=gpu-0", "GPU_DEVICE_1=gpu-1", "GPU_DEVICE_2=gpu-2"),
        "first": _ended("GPU_DEVICE_0=gpu-0", "GPU_DEVICE_1=gpu-1"),  # the second request leaked in
        "second": _ended("GPU_DEVICE_1=gpu-1"),
        "none": _ended("PATH=/bin"),
    }
    probe = _probe(_K8s(logs, pod, claims))
    assert container_claims(Obj(pod), "all") == [("x", None), ("p-c1-abc", None)]
    assert probe.shows_claimed_devices(_POD, "all") and probe.shows_claimed_devices(_POD, "second")  # second/one
    first = probe.shows_claimed_devices(_POD, "first")
    assert not first and "x request first" in first.evidence and "shows ['gpu-0', 'gpu-1']" in first.evidence
    assert probe.shows_claimed_devices(_POD, "none") and probe.shows_no_device(_POD, "none")


def test_claimed_devices_fail_on_another_device_and_on_an_unrecorded_template_claim():
    spec = _spec(_ctr("ctr", ("c0", None)), claims=[{"name": "c0", "resourceClaimName": "x"}])
    probe = _probe(_K8s({"ctr": _ended("GPU_DEVICE_1=gpu-1")}, _pod(spec), {"x": _claim("x", ("gpu", "gpu-0"))}))
    shown, evidence = probe.shows_claimed_devices(_POD)
    assert not shown and "expected ['gpu-0'], the probe shows ['gpu-1']" in evidence
    pending = _pod(_spec(_ctr("ctr", ("c0", None)), claims=[{"name": "c0", "resourceClaimTemplateName": "t"}]))
    with pytest.raises(LookupError, match="no ResourceClaim yet"):
        _probe(_K8s({"ctr": ""}, pending)).shows_claimed_devices(_POD)


def test_per_request_probe_fails_unless_the_profile_opts_out_and_then_says_so():
    spec = _spec(_ctr("ctr", ("c0", None)), claims=[{"name": "c0", "resourceClaimName": "x"}])
    k8s = _K8s({"ctr": _ended("claim_x_gpu=true")}, _pod(spec), {"x": _claim("x", ("gpu", "gpu-0"))})
    shown, evidence = _probe(k8s, regex=r"^claim_\w+=true$").shows_claimed_devices(_POD)
    assert not shown and "naming no device of this node ['claim_x_gpu=true']" in evidence
    opted = SimpleNamespace(visibility=Visibility(env_regex=r"^claim_\w+=true$", names_devices=False))
    shown, evidence = Probe(k8s, opted, None, _INVENTORY).shows_claimed_devices(_POD)
    assert shown and "names_devices: false" in evidence and "not which device" in evidence
    assert not _probe(k8s, regex=r"^claim_\w+=true$").shows_no_device(_POD)


def test_probe_falls_back_to_the_node_log_and_says_so():
    access = SimpleNamespace(container_log=lambda node, ns, pod, uid, ctr: _ended(f"GPU_DEVICE_0={node}-{uid}-{ctr}"))
    visible, evidence = _probe(_K8s({}, fail=True), access=access).sees(_POD)
    assert visible and "GPU_DEVICE_0=n1-u1-ctr" in evidence and "pods/log failed with 502" in evidence
    with pytest.raises(errors.ApiError):
        _probe(_K8s({}, fail=True)).sees(_POD)


def test_shows_allocation_compares_the_claims_devices_on_the_pods_node():
    probe = _probe(_K8s({"ctr": _ended("GPU_DEVICE_0=gpu-0", "GPU_DEVICE_1=gpu-1")}))
    bound = Obj({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"}})
    assert probe.shows_allocation(bound, Obj(_claim("c", ("gpu", "gpu-0"), ("gpu", "gpu-1"))), _INVENTORY)
    ok, evidence = probe.shows_allocation(bound, Obj(_claim("c", ("gpu", "gpu-2"))), _INVENTORY)
    assert not ok and "gpu-2" in evidence
    with pytest.raises(ValueError, match="no spec.nodeName"):
        probe.shows_allocation(_POD, Obj(_claim("c", ("gpu", "gpu-2"))), _INVENTORY)


def test_suites_name_devices_instead_of_counting_probe_hits():
    """Suites judge containers with shows_claimed_devices / shows_no_device / shows_allocation, never with a
    count or an equality of probe hits (a driver injecting another device would pass those)."""
    suites = Path(__file__).resolve().parents[2] / "suites"
    offenders = [
        f"{p.relative_to(suites)}:{n}"
        for p in sorted(suites.rglob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if ".hits(" in line
    ]
    assert offenders == [], offenders
