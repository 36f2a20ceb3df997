"""Host-state diff and attribution (conformance_lab.local.hostdiff, hostowners): a leftover of a cluster that is
gone counts; what a cluster alive at either capture owns is set aside, unless it is the cluster measured."""

from conformance_lab.local import hostdiff, hostowners
from conformance_lab.local.config import Layout
from conformance_lab.local.hoststate import Snapshot
from conformance_lab.local.state import ClusterState

C1 = ClusterState(name="c1", slot=3, nodes=2, log_dir="/tmp/l")
LAY = Layout(name="c1", slot=3, nodes=2, log_dir=None)
OWNERS = {"cluster c1": hostowners.cluster_tokens(C1), "kube-proxy of c1": list(hostowners.KUBE_PROXY_TOKENS)}


def _snap(owners=None, **sections):
    return Snapshot(taken="t", sections=sections, owners=owners or {})


def test_identical_snapshots_differ_in_nothing():
    a = _snap(links=["lo type=loopback master=- up=yes mtu=65536"], processes=["kubelet cgroup=/ x"])
    assert hostdiff.diff(a, a) == []
    assert "no change left on the host" in "\n".join(hostdiff.report(a, a, []))


def test_a_leftover_of_a_cluster_that_is_gone_counts_unexplained():
    before = _snap(links=[])
    after = _snap(links=[f"{LAY.bridge(0)} type=ether master=- up=yes mtu=1500"])
    [change] = hostdiff.diff(before, after)
    assert (change.sign, change.owner, change.counts) == ("+", "", True)
    assert hostdiff.summary([change]) == {"links": 1}


def test_what_a_cluster_alive_at_a_capture_owns_is_set_aside():
    line = f"{LAY.bridge(1)} type=ether master=- up=yes mtu=1500"
    changes = hostdiff.diff(_snap(links=[]), _snap(OWNERS, links=[line]))
    assert [(c.owner, c.counts) for c in changes] == [("cluster c1", False)]
    report = "\n".join(hostdiff.report(_snap(), _snap(OWNERS), changes))
    assert "no change left" in report and "cluster c1 1" in report


def test_the_measured_cluster_s_changes_count():
    line = f"pause cgroup={LAY.cgroup_root(0)}/kubepods/besteffort/pod1/abc /pause"
    changes = hostdiff.diff(_snap(OWNERS, processes=[]), _snap(OWNERS, processes=[line]), ours=frozenset({"c1"}))
    assert [(c.owner, c.counts) for c in changes] == [("cluster c1", True)]


def test_lines_are_compared_as_multisets():
    shim = "containerd-shim cgroup=/ /cache/containerd-shim-runc-v2 -namespace k8s.io"
    changes = hostdiff.diff(_snap(processes=[shim, shim]), _snap(processes=[shim, shim, shim]))
    assert [(c.sign, c.line) for c in changes] == [("+", shim)]


def test_host_global_kube_chains_belong_to_a_running_kube_proxy_and_count_for_it():
    line = "nat -N KUBE-SERVICES"
    assert hostdiff.diff(_snap(iptables=[]), _snap(OWNERS, iptables=[line]))[0].counts is False
    assert hostdiff.diff(_snap(iptables=[]), _snap(OWNERS, iptables=[line]), ours=frozenset({"c1"}))[0].counts
    assert hostdiff.diff(_snap(iptables=[line]), _snap(iptables=[]))[0].counts  # removed, nobody alive: a change


def test_cluster_tokens_name_its_things_and_not_a_longer_named_cluster_s():
    owners = {"cluster c1": hostowners.cluster_tokens(C1)}
    ours = [
        f"/sys/fs/cgroup/cpu{LAY.cgroup_root(1)}",
        f"kubelet cgroup=/ /c/kubelet --root-dir {LAY.state_dir}/node-0/kubelet",
        f"tcp 127.0.0.1:{LAY.apiserver_port} by kube-apiserver cgroup=/ x",
        "routes dst=10.88.49.0/24 dev=x protocol=kernel",
        "nat -A DRA-API-c1 -d 10.0.3.1/32 -p tcp -m tcp --dport 443 -j DNAT --to-destination 192.0.2.2:6446",
        f"{LAY.run_dir}/",
        'nat -A CNI-<id> ! -d 224.0.0.0/4 -m comment --comment "name: \\"dra-c1-1\\" id: "<id>"" -j MASQUERADE',
        "nat -N CNI-<dra-c1-0>",
        "dst=fe80::/64 dev=veth05901fbf protocol=kernel metric=256 master=" + LAY.bridge(0),
    ]
    assert [hostowners.owner_of(line, owners) for line in ours] == ["cluster c1"] * len(ours)
    other = Layout(name="c10", slot=4, nodes=2, log_dir=None)
    theirs = [f"/sys/fs/cgroup/cpu{other.cgroup_root(0)}", f"{other.state_dir}/", "c10-node-0", "nat -N DRA-API-c10"]
    assert [hostowners.owner_of(line, owners) for line in theirs] == [""] * len(theirs)


def test_owners_now_lists_only_clusters_with_a_live_process(monkeypatch):
    monkeypatch.setattr(hostowners, "existing_clusters", lambda: ["c1"])
    monkeypatch.setattr(hostowners.ClusterState, "load", classmethod(lambda cls, name: C1))
    monkeypatch.setattr(hostowners, "_kind_alive", lambda: False)
    assert hostowners.owners_now() == {}  # recorded, but no process runs


def test_the_kind_runtime_owns_its_nerdctl_network_bridges(monkeypatch, tmp_path):
    from conformance_lab.kind import host as kindhost

    conf = tmp_path / "cni" / "dra-kind"
    conf.mkdir(parents=True)
    (conf / "nerdctl-kind.conflist").write_text(
        '{"name": "kind", "plugins": [{"type": "bridge", "bridge": "br-0b27c158feb3"}, {"type": "portmap"}]}'
    )
    (conf / "broken.conflist").write_text("{not json")
    monkeypatch.setattr(kindhost, "LIB", tmp_path)
    monkeypatch.setattr(hostowners, "existing_clusters", lambda: [])
    monkeypatch.setattr(hostowners, "_kind_alive", lambda: True)
    owners = hostowners.owners_now()
    line = "links     + veth2e2407bf type=ether master=br-0b27c158feb3 up=yes mtu=1500"
    assert hostowners.owner_of(line, owners) == "kind runtime"
    assert hostowners.owner_of("links     + br-ffff00001111 type=bridge", owners) == ""
