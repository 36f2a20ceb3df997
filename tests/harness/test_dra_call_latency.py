"""Per-driver NodePrepareResources / NodeUnprepareResources latency (issue 26 §4): the percentiles, the kubelet
log parsing (conformance/node/kubelet_spans.py), the suite-call timing sink (conformance/node/call_timing.py)
and the report section with its SVG plot (conformance/reporting/dra_latency.py). Pure or on tmp files; the
timing of real calls through a real reference-driver plugin is in test_draplugin.py."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from conformance.core.handles import HasComponentLogs
from conformance.core.stats import percentile, summary
from conformance.node import call_timing, kubelet_spans
from conformance.reporting import dra_latency

U1, U2 = "0b6b3b4e-1f0a-4c55-9c1e-1a2b3c4d5e6f", "9f9f9f9f-aaaa-4bbb-8ccc-0123456789ab"


PLUGIN = 'driverName="gpu.x" endpoint="/p/dra.sock"'


def _line(stamp: str, where: str, message: str, rest: str) -> str:
    """A klog text line as kubernetes v1.34 dra_plugin.go writes it (``stamp``: ``mmdd hh:mm:ss.uuuuuu``)."""
    return f'I{stamp}   31476 {where}] "{message}" {rest}'


def _claims(uid: str) -> str:
    return f"Claims:[]*Claim{{&Claim{{Namespace:ns,UID:{uid},Name:c,}},}},"


def _req(uid: str, kind: str = "Prepare") -> str:
    return f'request="&Node{kind}ResourcesRequest{{{_claims(uid)}}}"'


def _resp(uid: str) -> str:
    entries = f"map[string]*NodePrepareResourceResponse{{{uid}: &NodePrepareResourceResponse{{Devices:[],Error:,}},}}"
    return f'response="&NodePrepareResourcesResponse{{Claims:{entries},}}"'


PREPARE, DONE_PREPARE = "Calling NodePrepareResources rpc", "Done calling NodePrepareResources rpc"
GONE = 'response="nil" err="rpc error: code = Unavailable desc = gone"'
# what kubernetes v1.34 dra_plugin.go logs at V(4) (err=null as seen from a v1.34.4 kubelet): two prepares
# overlapping, one failed unprepare over midnight
LOG = [
    "==== 09:23:16 start: kubelet --v=1 --vmodule=dra_plugin=4",
    _line("1205 09:24:34.100000", "dra_plugin.go:144", PREPARE, f"{PLUGIN} {_req(U1)}"),
    _line("1205 09:24:34.150000", "dra_plugin.go:144", PREPARE, f"{PLUGIN} {_req(U2)}"),
    _line("1205 09:24:34.160000", "reconciler_common.go:251", "operationExecutor.MountVolume started", ""),
    _line("1205 09:24:34.162500", "dra_plugin.go:163", DONE_PREPARE, f"{PLUGIN} {_resp(U2)} err=<nil>"),
    _line("1205 09:24:34.103250", "dra_plugin.go:163", DONE_PREPARE, f"{PLUGIN} {_resp(U1)} err=null"),
    _line("1205 23:59:59.990000", "dra_plugin.go:173", "Calling NodeUnprepareResource rpc", _req(U1, "Unprepare")),
    _line("1206 00:00:00.010000", "dra_plugin.go:194", "Done calling NodeUnprepareResources rpc", f"{PLUGIN} {GONE}"),
]


def test_percentiles_interpolate_between_ranks_like_numpy():
    values = [0.004, 0.001, 0.002, 0.003, 0.010]
    assert percentile(values, 0.5) == pytest.approx(0.003)
    assert percentile(values, 0.9) == pytest.approx(0.0076)  # numpy.percentile(values, 90)
    assert summary(values, digits=6) == {
        "count": 5,
        "p50": 0.003,
        "p90": 0.0076,
        "p99": 0.00976,
        "mean": 0.004,
        "max": 0.01,
    }
    assert summary([])["count"] == 0 and summary([])["p50"] is None
    with pytest.raises(ValueError, match="outside 0..1"):
        percentile(values, 1.5)


def test_kubelet_spans_pair_calls_by_claim_uid_and_name_failures():
    spans = kubelet_spans.spans(LOG, node="n0")
    prepare = sorted((s for s in spans if s["method"] == "NodePrepareResources"), key=lambda s: s["s"])
    assert [s["s"] for s in prepare] == [pytest.approx(0.00325), pytest.approx(0.0125)]  # µs resolution
    assert all(s["ok"] and s["driver"] == "gpu.x" and s["node"] == "n0" and s["claims"] == 1 for s in prepare)
    # the unprepare spans midnight, its "Calling" line has no driverName, the failed call's response is nil
    (unprepare,) = [s for s in spans if s["method"] == "NodeUnprepareResources"]
    assert unprepare["s"] == pytest.approx(0.02) and not unprepare["ok"] and unprepare["driver"] == "gpu.x"


def test_kubelet_spans_from_log_dir_say_why_there_are_none(tmp_path):
    (tmp_path / "n0-kubelet.log").write_text("\n".join(LOG) + "\n")
    found, reason = kubelet_spans.from_log_dir(tmp_path)
    assert len(found) == 3 and reason == "" and {s["node"] for s in found} == {"n0"}
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    (quiet / "n1-kubelet.log").write_text(LOG[3] + "\n")
    none, why = kubelet_spans.from_log_dir(quiet)
    assert none == [] and kubelet_spans.VMODULE in why and "n1-kubelet.log" in why
    assert "no *-kubelet.log" in kubelet_spans.from_log_dir(tmp_path / "absent")[1]


def test_kubelet_spans_record_without_component_logs_says_not_available(tmp_path):
    class Existing:
        nodes = ()

    class Local:
        log_dir = tmp_path

    (tmp_path / "n0-kubelet.log").write_text("\n".join(LOG) + "\n")
    assert isinstance(Local(), HasComponentLogs) and not isinstance(Existing(), HasComponentLogs)
    doc = kubelet_spans.record(Existing(), tmp_path / "r1")
    assert not doc["available"] and "existing cluster" in doc["reason"] and kubelet_spans.load(tmp_path / "r1") == doc
    assert kubelet_spans.record(Local(), tmp_path / "r2")["available"]


def test_call_timing_appends_one_line_per_call_and_only_when_configured(tmp_path):
    call_timing.configure(None)
    call_timing.record("d", "n", "NodePrepareResources", 1, 0.5, True, "direct")
    call_timing.configure(tmp_path)
    try:
        call_timing.record("d", "n", "NodePrepareResources", 1, 0.0012345678, True, "direct")
        call_timing.record("d", "n", "NodeUnprepareResources", 2, 0.002, False, "relay")
    finally:
        call_timing.configure(None)
    (tmp_path / call_timing.FILE).open("a").write("not json\n")
    rows = call_timing.load(tmp_path)
    assert [(r["method"], r["s"], r["ok"], r["via"], r["claims"]) for r in rows] == [
        ("NodePrepareResources", 0.001235, True, "direct", 1),
        ("NodeUnprepareResources", 0.002, False, "relay", 2),
    ]
    assert call_timing.load(tmp_path / "absent") == []


def test_report_section_table_svg_and_json(tmp_path):
    call_timing.configure(tmp_path)
    try:
        for i in range(1, 11):
            call_timing.record("gpu.x", "n0", "NodePrepareResources", 1, i / 1000, i != 10, "direct")
    finally:
        call_timing.configure(None)
    (tmp_path / "n0-kubelet.log").write_text("\n".join(LOG) + "\n")
    kubelet_spans.record(type("C", (), {"log_dir": tmp_path})(), tmp_path)
    section, files = dra_latency.write(tmp_path)
    assert files == [dra_latency.JSON_FILE, dra_latency.SVG_FILE]
    assert "| suite (direct) | gpu.x | NodePrepareResources | 10 | 1 | 5.5 | 9.1 | 9.91 | 10 |" in section, section
    assert "| kubelet log | gpu.x | NodeUnprepareResources | 1 | 1 |" in section and "not available" not in section
    doc = json.loads((tmp_path / dra_latency.JSON_FILE).read_text())
    assert doc["unit"] == "seconds" and len(doc["rows"]) == 3
    svg = ET.fromstring((tmp_path / dra_latency.SVG_FILE).read_text())  # well-formed
    assert svg.tag.endswith("svg") and len([e for e in svg.iter() if e.tag.endswith("rect")]) == 3


def test_report_section_absent_or_explained(tmp_path):
    assert dra_latency.write(tmp_path) == ("", [])  # nothing recorded (older run, unit run): no section
    kubelet_spans.record(object(), tmp_path)
    section, files = dra_latency.write(tmp_path)
    assert "No NodePrepareResources/NodeUnprepareResources call was timed" in section
    assert "Kubelet spans: not available: the cluster's kubelet logs are not files" in section
    assert files == [dra_latency.JSON_FILE]
    with pytest.raises(ValueError, match="no latency rows"):
        dra_latency.svg({"rows": []})


def test_relay_seconds_read_from_the_answer_line():
    from conformance.node.exec_grpc import relay_seconds  # noqa: PLC0415

    assert relay_seconds("noise\nDRA-RELAY OK AAAA 0.001250\n") == pytest.approx(0.00125)
    assert relay_seconds("DRA-RELAY OK  0.5") == 0.5  # an empty reply message
    assert relay_seconds("DRA-RELAY ERR NOT_FOUND eA== 0.002") == 0.002
    assert relay_seconds("DRA-RELAY OK AAAA") is None and relay_seconds("DRA-RELAY ERR UNKNOWN eA==") is None
    assert relay_seconds("Traceback ...") is None
