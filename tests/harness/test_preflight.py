"""``dra-conformance preflight`` and ``cleanup`` without a cluster: the permissions table and its
SelfSubjectAccessReviews, each check's lines against a fake API (fakes in unit tests only), the text and JSON
output, the exit codes (0 all required ok, 1 something missing, 3 unreachable, 4 bad input), and cleanup's
dry run, which lists a run's objects, keeps the driver's and deletes nothing."""

from __future__ import annotations

import json

import pytest
import yaml

from conformance import cli
from conformance.core import errors, names, permissions
from conformance.core.objects import Obj
from conformance.k8s import access
from conformance.runner import cleanup, preflight
from conformance.runner import preflight_checks as pc

DRIVER = "gpu.dra-conformance.test"  # fixtures/drivers/reference.yaml
SERVED = {"v1": ["deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"]}
METRICS = 'kubernetes_feature_enabled{name="DRAAdminAccess",stage="BETA"} 1\n'


def _node(name: str, images: list[str]) -> dict:
    return {"kind": "Node", "metadata": {"name": name}, "status": {"images": [{"names": images}]}}


class FakeApi:
    """The reads preflight makes, answered from dicts; SelfSubjectAccessReviews allowed unless ``denied``
    holds ``(verb, subject)``; ``forbidden``: kinds whose list answers 403."""

    def __init__(self, denied=(), forbidden=(), metrics=METRICS, objects=None):
        self.denied, self.forbidden, self.metrics = set(denied), set(forbidden), metrics
        self.reviews: list[dict] = []
        self.objects = objects or {
            "DeviceClass": [{"kind": "DeviceClass", "metadata": {"name": DRIVER}}],
            "ResourceSlice": [_reference_slice("n1")],
            "Node": [_node("n1", ["docker.io/library/busybox:1.36"]), _node("n2", [])],
        }

    def request(self, method, path, *, body=None, **_):
        assert (method, path) == ("POST", access.PATH)
        self.reviews.append(body["spec"])
        spec = body["spec"]
        if "nonResourceAttributes" in spec:
            verb, subject = spec["nonResourceAttributes"]["verb"], spec["nonResourceAttributes"]["path"]
        else:
            a = spec["resourceAttributes"]
            subject = f"{a['resource']}.{a['group']}" if a["group"] else a["resource"]
            subject += f"/{a['subresource']}" if a.get("subresource") else ""
            verb = a["verb"]
        return {"status": {"allowed": (verb, subject) not in self.denied}}, []

    def get_json(self, path, query=None):
        if path == "/version":
            return {"gitVersion": "v1.34.4", "minor": "34"}
        if path == "/apis/resource.k8s.io":
            return {"versions": [{"version": v} for v in SERVED]}
        return {"resources": [{"name": p} for p in SERVED[path.rsplit("/", 1)[1]]]}

    def get_raw(self, path, query=None):
        if ("get", "/metrics") in self.denied or path != "/metrics":
            raise errors.Forbidden(403, "Forbidden", f"cannot get {path}", request=f"GET {path}")
        return self.metrics

    def list(self, kind, namespace=None, *, field_selector="", **_):
        if kind in self.forbidden:
            raise errors.Forbidden(403, "Forbidden", f"cannot list {kind}", request=f"GET {kind}")
        items = [Obj(o) for o in self.objects.get(kind, [])]
        if field_selector:
            key, value = field_selector.split("=", 1)
            items = [o for o in items if o.get(key) == value]
        return items

    def exists(self, kind, name, namespace=None, version=None):
        return any(o["metadata"]["name"] == name for o in self.objects.get(kind, []))


VALUES = {"int": 0, "bool": True, "string": "x", "version": "1.0.0"}


def _reference_slice(node: str, count: int = 4, types: dict | None = None) -> dict:
    """A slice of ``count`` devices publishing every attribute of the reference profile with its type."""
    types = types or dict(preflight.load_profile("reference").attributes)
    attrs = {name: {kind: VALUES[kind]} for name, kind in types.items()}
    return {
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{node}-0",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": f"uid-{node}"}],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}", "attributes": attrs} for i in range(count)],
        },
    }


def test_the_profile_is_compared_with_what_the_driver_publishes():
    """A wrong attribute type and a devices_per_node above what a node publishes are named before a run (the
    run would fail on both; a fresh user's rehearsal found preflight silent about them)."""
    wrong = {**dict(_profile().attributes), "index": "string"}
    slices = [Obj(_reference_slice("n1", 4, wrong)), Obj(_reference_slice("n2", 3))]
    rules, count = pc.profile_vs_slices(slices, _profile())
    assert rules.status == pc.MISSING and "index" in rules.detail and "profile" in rules.fix, rules
    assert count.status == pc.MISSING and "n2: 3" in count.detail and "n1" not in count.detail, count
    good = pc.profile_vs_slices([Obj(_reference_slice("n1"))], _profile())
    assert [c.status for c in good] == [pc.OK, pc.OK], good


def _profile():
    return preflight.load_profile("reference")


def test_every_needed_permission_is_a_valid_policy_rule():
    rules = permissions.cluster_role_rules()
    assert len(rules) == len(permissions.NEEDED)
    for rule, row in zip(rules, permissions.NEEDED, strict=True):
        assert rule["verbs"] and set(rule) in ({"apiGroups", "resources", "verbs"}, {"nonResourceURLs", "verbs"}), row
    assert {"nonResourceURLs": ["/metrics"], "verbs": ["get"]} in rules
    subjects = {p.subject for p in permissions.NEEDED}
    assert {"namespaces", "pods/log", "resourceslices.resource.k8s.io", "/metrics"} <= subjects


def test_node_access_and_unserved_rows_apply_only_when_asked():
    plain = {p.subject for p in permissions.applicable(False, {"resourceclaims"})}
    full = {p.subject for p in permissions.applicable(True, {"devicetaintrules"})}
    assert "pods/exec" not in plain and "devicetaintrules.resource.k8s.io" not in plain
    assert {"pods/exec", "devicetaintrules.resource.k8s.io"} <= full


def test_review_asks_every_namespace_and_splits_the_subresource():
    row = next(p for p in permissions.NEEDED if p.resource == "pods/log")
    spec = access.review_body(row, "get")["spec"]["resourceAttributes"]
    assert spec == {"verb": "get", "group": "", "resource": "pods", "subresource": "log", "namespace": ""}


def test_rbac_lines_name_each_missing_permission_and_the_rule_to_add():
    api = FakeApi(denied={("create", "namespaces"), ("list", "resourceslices.resource.k8s.io"), ("get", "/metrics")})
    lines = {c.check: c for c in pc.rbac_checks(api, False, SERVED)}
    assert len(api.reviews) == sum(len(p.verbs) for p in permissions.applicable(False, set(SERVED["v1"])))
    ns, slices, metrics = lines["rbac namespaces"], lines["rbac resourceslices.resource.k8s.io"], lines["rbac /metrics"]
    assert (ns.status, slices.status, metrics.status) == (pc.MISSING,) * 3
    assert "cannot create namespaces (cluster-wide)" in ns.detail and "list resourceslices" in slices.detail
    assert "get /metrics" in metrics.detail and '"nonResourceURLs": ["/metrics"]' in metrics.fix
    assert '"resources": ["namespaces"], "verbs": ["create"]' in ns.fix
    assert lines["rbac pods"].status == pc.OK


def test_an_optional_permission_missing_is_a_warning():
    lines = {c.check: c for c in pc.rbac_checks(FakeApi(denied={("get", "nodes/proxy")}), False, SERVED)}
    assert lines["rbac nodes/proxy"].status == pc.WARN
    assert preflight.exit_code(list(lines.values())) == 0


def test_all_checks_ok_on_a_cluster_that_has_everything():
    api = FakeApi(objects={**FakeApi().objects, "Node": [_node("n1", ["busybox:1.36"])]})
    checks = preflight.run_checks(api, _profile(), node_access=False)
    assert checks and all(c.status == pc.OK for c in checks), preflight.render(checks, "text")
    names_ = [c.check for c in checks]
    assert names_[0] == "api resource.k8s.io/v1" and "feature gates" in names_ and "image test pods" in names_
    assert f"resourceslices {DRIVER}" in names_ and preflight.exit_code(checks) == 0


def test_missing_driver_and_refused_reads_are_named():
    api = FakeApi(objects={"Node": []}, denied={("get", "/metrics")})
    checks = {c.check: c for c in preflight.run_checks(api, _profile(), node_access=False)}
    assert checks[f"deviceclass {DRIVER}"].status == pc.MISSING
    assert (
        checks[f"resourceslices {DRIVER}"].status == pc.MISSING
        and "0 ResourceSlice" in checks[f"resourceslices {DRIVER}"].detail
    )
    assert checks["feature gates"].status == pc.WARN and "403" in checks["feature gates"].detail
    assert preflight.exit_code(list(checks.values())) == 1
    refused = {c.check: c for c in preflight.run_checks(FakeApi(forbidden={"Node"}), _profile(), False)}
    assert refused["nodes"].status == pc.WARN and "cannot list Node" in refused["nodes"].detail


def test_an_image_missing_on_a_node_names_the_node():
    nodes = [Obj(n) for n in FakeApi().objects["Node"]]
    checks = pc.image_checks(nodes, {"test pods": "busybox:1.36", "helper gRPC relay": ""})
    assert (
        checks[0].status == pc.WARN and "Node.status.images of n2 " in checks[0].detail and "n1" not in checks[0].detail
    )
    assert checks[1].status == pc.WARN and "gRPC" in checks[1].detail


def test_text_and_json_output():
    checks = [pc.Check("a", pc.OK, "fine"), pc.Check("b", pc.MISSING, "gone", "add it")]
    text = preflight.render(checks, "text").splitlines()
    assert text == ["ok      a: fine", "missing b: gone (fix: add it)", "1 ok, 1 missing, 0 warn"]
    assert json.loads(preflight.render(checks, "json")) == [
        {"check": "a", "status": "ok", "detail": "fine", "fix": ""},
        {"check": "b", "status": "missing", "detail": "gone", "fix": "add it"},
    ]
    assert preflight.exit_code(checks) == 1 and preflight.exit_code(checks[:1]) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["preflight", "--driver", "no-such-driver"],
        ["preflight", "--kubeconfig", "/no/such/kubeconfig"],
        ["preflight", "--node-access", "host"],
        ["cleanup", "--kubeconfig", "/no/such/kubeconfig", "--all"],
        ["cleanup", "--all", "--run-id", "x"],
        ["cleanup"],
    ],
)
def test_bad_input_exits_4(argv, capsys):
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse usage errors (conformance.cli.Parser exits 4)
        code = exc.code
    assert code == 4 and capsys.readouterr().err


def test_unreachable_api_server_exits_3(tmp_path, capsys):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    assert cli.main(["preflight", "--kubeconfig", str(kubeconfig)]) == 3
    assert "127.0.0.1:9" in capsys.readouterr().err


def test_cleanup_dry_run_lists_the_run_keeps_the_driver_and_deletes_nothing():
    run = "r20261205-0000-abcd"
    ours = {"kind": "Namespace", "metadata": {"name": "t-1", "labels": names.run_labels(run)}}
    driver = {
        "kind": "DeviceClass",
        "metadata": {"name": "c", "labels": {**names.run_labels(run), "dra-conformance.test/owner": "driver"}},
    }

    class Api(FakeApi):
        def list(self, kind, namespace=None, *, label_selector="", **_):
            assert label_selector == f"{names.RUN_LABEL}={run}"
            return [Obj(o) for o in (ours, driver) if o["kind"] == kind]

        def delete(self, *a, **k):
            raise AssertionError("a dry run deletes nothing")

    lines = []
    assert cleanup.clean(Api(), [run], dry_run=True, out=lines.append) == 0
    assert f"would remove Namespace t-1 (run {run})" in lines and lines[-1] == "would remove 1 object(s) of 1 run(s)"
    assert any(line.startswith("kept DeviceClass c") for line in lines)


class DryRunApi:
    """Namespace create/delete and pod dry runs (refused with ``refusal`` when set) for admission_check."""

    def __init__(self, refusal=""):
        self.refusal, self.created, self.deleted, self.dry_runs = refusal, [], [], []

    def create(self, obj):
        self.created.append(obj)
        return Obj(obj)

    def unguarded(self):
        return self

    def delete(self, kind, name, namespace=None):
        self.deleted.append((kind, name))

    def request(self, method, path, *, query=None, body=None):
        assert (method, query) == ("POST", {"dryRun": "All"}) and path.endswith("/pods"), (method, path, query)
        self.dry_runs.append(body["spec"]["nodeName"])
        if self.refusal == "interrupt":
            raise KeyboardInterrupt
        if self.refusal:
            raise errors.Forbidden(403, "Forbidden", self.refusal, request=f"POST {path}")
        return {}, []


@pytest.fixture
def no_waits(monkeypatch):
    gone = []
    monkeypatch.setattr(pc.waits, "default_service_account", lambda *a, **k: None)
    monkeypatch.setattr(pc.waits, "object_gone", lambda k8s, obj, **k: gone.append(obj.name))
    return gone


def test_admission_dry_runs_a_helper_pod_per_node_in_a_run_labelled_privileged_namespace(no_waits):
    api = DryRunApi()
    check = pc.admission_check(api, ["n1", "n2"], "busybox:1.36")
    ns = api.created[0]["metadata"]
    assert check.status == pc.OK and api.dry_runs == ["n1", "n2"]
    assert ns["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert ns["labels"][names.RUN_LABEL].startswith("preflight-")
    assert api.deleted == [("Namespace", ns["name"])] and no_waits == [ns["name"]]


def test_admission_refusal_is_named_and_the_namespace_removed_even_on_ctrl_c(no_waits):
    api = DryRunApi("violates PodSecurity privileged")
    check = pc.admission_check(api, ["n1", "n2"], "busybox:1.36")
    assert (
        check.status == pc.MISSING and "refused on n1, n2: " in check.detail and "violates PodSecurity" in check.detail
    )
    assert "Pod Security" in check.fix and len(api.deleted) == 1
    interrupted = DryRunApi("interrupt")
    with pytest.raises(KeyboardInterrupt):
        pc.admission_check(interrupted, ["n1"], "busybox:1.36")
    assert interrupted.deleted == [("Namespace", interrupted.created[0]["metadata"]["name"])]


def test_cleanup_sweeps_each_run_and_a_survivor_exits_1(monkeypatch):
    run = "r20261205-0000-abcd"
    ns = {"kind": "Namespace", "metadata": {"name": "t-1", "labels": names.run_labels(run)}}
    swept = []

    class Api(FakeApi):
        def list(self, kind, namespace=None, *, label_selector="", **_):
            assert label_selector in (names.RUN_LABEL, f"{names.RUN_LABEL}={run}"), label_selector
            return [Obj(ns)] if kind == "Namespace" else []

    def sweep_run(k8s, run_id):
        swept.append(run_id)
        if len(swept) > 1:
            raise errors.LeakError(["Namespace t-1"])
        return ["Namespace t-1"]

    monkeypatch.setattr(cleanup.sweep, "sweep_run", sweep_run)
    assert cleanup.sweep.run_ids(Api()) == [run]
    lines = []
    assert cleanup.clean(Api(), [run], dry_run=False, out=lines.append) == 0
    assert lines == [f"removed Namespace t-1 (run {run})", "removed 1 object(s) of 1 run(s)"]
    lines.clear()
    assert cleanup.clean(Api(), [run], dry_run=False, out=lines.append) == 1
    assert lines[0].startswith(f"error: run {run}: 1 object(s) survived") and swept == [run, run]


def test_print_role_writes_the_cluster_role_a_run_needs_without_a_cluster(capsys, monkeypatch, tmp_path):
    """`preflight --print-role` prints a ClusterRole with a rule per row of the permissions table (pods/exec
    only with --node-access privileged-pod), each rule's purpose annotated, and contacts no cluster."""
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))  # no cluster anywhere
    assert cli.main(["preflight", "--print-role"]) == 0
    role = yaml.safe_load(capsys.readouterr().out)
    assert role["kind"] == "ClusterRole" and role["rules"] == permissions.cluster_role_rules(node_access=False)
    assert {"nonResourceURLs": ["/metrics"], "verbs": ["get"]} in role["rules"]
    assert not any("pods/exec" in r.get("resources", []) for r in role["rules"])
    assert len(role["metadata"]["annotations"]) == len(role["rules"])
    assert cli.main(["preflight", "--print-role", "--node-access", "privileged-pod"]) == 0
    with_exec = yaml.safe_load(capsys.readouterr().out)
    assert with_exec["rules"] == permissions.cluster_role_rules(node_access=True)
    assert any("pods/exec" in r.get("resources", []) for r in with_exec["rules"])
    # the reaper's permission is a Role inside the helper namespace: nothing cluster-wide to create (issue 27 §4)
    assert not any({"clusterroles", "clusterrolebindings"} & set(r.get("resources", [])) for r in with_exec["rules"])
    roles = {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["create"]}
    assert roles in with_exec["rules"]


class RefusingApi(FakeApi):
    """An API server that answers /version (anonymous reads are allowed by default) and refuses every other
    request with ``status`` (401: the credentials; 403: the user's permissions); ``version_too``: /version too."""

    host = "https://fake:6443"
    kube = None

    def __init__(self, status: int, version_too: bool = False):
        super().__init__()
        self.status, self.version_too = status, version_too

    def _refuse(self, path):
        reason = {401: "Unauthorized", 403: "Forbidden"}[self.status]
        raise errors.api_error_for(self.status, reason, reason, request=f"GET {path}")

    def get_json(self, path, query=None):
        if path != "/version" or self.version_too:
            self._refuse(path)
        return super().get_json(path, query)

    def list(self, kind, namespace=None, **_):
        self._refuse(f"/api/v1/{kind.lower()}s")


@pytest.mark.parametrize(
    ("status", "said", "fix"),
    [(401, "refused the credentials", "log in again"), (403, "lacks a permission", "preflight --print-role")],
)
@pytest.mark.parametrize("version_too", [False, True])
def test_refused_credentials_or_permission_exit_3_naming_the_request_and_the_fix(
    status, said, fix, version_too, monkeypatch, capsys
):
    """s16 new-user F1: a 401/403 on discovery was a traceback with exit 1 ("something missing")."""
    api = RefusingApi(status, version_too)
    monkeypatch.setattr(preflight.K8s, "from_kubeconfig", classmethod(lambda cls, *a, **k: api))
    assert cli.main(["preflight", "--driver", "reference"]) == 3
    err = capsys.readouterr().err
    request = "GET /version" if version_too else "GET /apis/resource.k8s.io"
    assert err.startswith("error: ") and said in err and fix in err and request in err and "fake:6443" in err
    assert "Traceback" not in err


def test_nodes_401_is_the_credentials_and_403_stays_a_permission_the_caller_names():
    from conformance.k8s import discovery  # noqa: PLC0415

    with pytest.raises(errors.ClusterUnavailable, match=r"refused the credentials .*GET /api/v1/nodes: 401"):
        discovery.nodes(RefusingApi(401))
    with pytest.raises(errors.Forbidden):  # preflight turns it into a warn line (images not checked)
        discovery.nodes(RefusingApi(403))
    assert discovery.refused(errors.NotFound(404, "NotFound", "x"), RefusingApi(401)) is None


def test_cleanup_of_a_401_names_the_credentials_and_exits_3_a_403_stays_the_permission(monkeypatch, capsys):
    for status, code, said in ((401, 3, "refused the credentials"), (403, 1, "the cleanup needs list/delete")):
        api = RefusingApi(status)
        monkeypatch.setattr(cleanup.K8s, "from_kubeconfig", classmethod(lambda cls, *a, api=api, **k: api))
        assert cli.main(["cleanup", "--all", "--dry-run"]) == code
        out = capsys.readouterr()
        assert said in out.out + out.err and "Traceback" not in out.err
