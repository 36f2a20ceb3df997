"""Host cleanup primitives on the real host (root): mounts under a dir, cgroup subtree kill/remove,
CNI chain lookup by network name. Marked e2e because they need root."""

import os
import subprocess

import pytest
from conformance_lab.local import hostsys
from conformance_lab.local.processes import HostProcess

pytestmark = pytest.mark.e2e


def test_unmount_under_removes_nested_mounts(tmp_path):
    outer, inner = tmp_path / "a", tmp_path / "a" / "b"
    outer.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(outer)], check=True)
    inner.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(inner)], check=True)
    assert set(hostsys.mounts_under(tmp_path)) == {str(outer), str(inner)}
    assert hostsys.unmount_under(tmp_path) == []
    assert hostsys.mounts_under(tmp_path) == []


def test_cgroup_subtree_is_killed_and_removed(tmp_path):
    name = f"/dra-test-{os.getpid()}"
    hostsys.create_cgroup_root(name)
    proc = HostProcess.spawn("sleeper", "", ["sleep", "60"], tmp_path / "s.log")
    try:
        for hier in hostsys.cgroup_hierarchies():
            child = hier / name.strip("/") / "child"
            child.mkdir(exist_ok=True)
            if (child / "cpuset.cpus").exists():
                for f in ("cpuset.cpus", "cpuset.mems"):
                    (child / f).write_text((hier / name.strip("/") / f).read_text())
            (child / "cgroup.procs").write_text(str(proc.pid))
        assert hostsys.cgroup_pids(name) == {proc.pid}
        assert hostsys.kill_cgroup(name) == set()
        assert not proc.is_running()
    finally:
        proc.stop(timeout=1)
        left = hostsys.remove_cgroup_root(name)
    assert left == []
    assert not any((h / name.strip("/")).exists() for h in hostsys.cgroup_hierarchies())


def test_cni_chains_are_found_and_deleted_by_network_name():
    chain, net = f"CNI-drctest{os.getpid() % 100000}", f"dra-test-{os.getpid()}"
    comment = f'name: "{net}" id: "abc"'
    subprocess.run(["iptables", "-t", "nat", "-N", chain], check=True)
    subprocess.run(
        [
            "iptables",
            "-t",
            "nat",
            "-A",
            "POSTROUTING",
            "-s",
            "10.99.0.5/32",
            "-m",
            "comment",
            "--comment",
            comment,
            "-j",
            chain,
        ],
        check=True,
    )
    try:
        assert [c for _, c in hostsys.cni_chains_for([net])] == [chain]
        hostsys.delete_cni_chains([net])
        assert hostsys.cni_chains_for([net]) == []
        assert f"nat/{chain}" not in hostsys.iptables_chains(("CNI-",))
    finally:
        subprocess.run(
            [
                "iptables",
                "-t",
                "nat",
                "-D",
                "POSTROUTING",
                "-s",
                "10.99.0.5/32",
                "-m",
                "comment",
                "--comment",
                comment,
                "-j",
                chain,
            ],
            capture_output=True,
        )
        subprocess.run(["iptables", "-t", "nat", "-X", chain], capture_output=True)


def test_delete_bridge_removes_the_bridge_and_its_veths():
    br, veth = f"dctest{os.getpid() % 10000}", f"vtest{os.getpid() % 10000}"
    subprocess.run(["ip", "link", "add", br, "type", "bridge"], check=True)
    try:
        subprocess.run(["ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "p"], check=True)
        subprocess.run(["ip", "link", "set", veth, "master", br], check=True)
        assert hostsys.links()[veth] == br
        hostsys.delete_bridge(br)
        assert not {br, veth, veth + "p"} & set(hostsys.links())
    finally:
        for name in (veth, br):
            subprocess.run(["ip", "link", "del", name], capture_output=True)


def test_delete_chains_removes_ipv6_chains_and_their_jumps_too():
    """The kubelet of a local node makes KUBE-* chains for IPv6 as well (KUBE-FIREWALL jumped to from INPUT and
    OUTPUT, KUBE-KUBELET-CANARY): 7 ip6tables lines were left per local cluster before delete_chains covered
    ip6tables. A prefix of this test's own keeps running clusters' chains out of it."""
    prefix = f"DRATEST{os.getpid() % 100000}-"
    chain = prefix + "FW"
    for tool in ("iptables", "ip6tables"):
        subprocess.run([tool, "-t", "filter", "-N", chain], check=True)
        subprocess.run([tool, "-t", "filter", "-A", "INPUT", "-m", "comment", "--comment", "dra test", "-j", chain])
    try:
        hostsys.delete_chains(prefix)
        for tool in ("iptables", "ip6tables"):
            left = subprocess.run([f"{tool}-save"], capture_output=True, text=True).stdout
            assert prefix not in left, (tool, [ln for ln in left.splitlines() if prefix in ln])
    finally:
        for tool in ("iptables", "ip6tables"):
            subprocess.run([tool, "-t", "filter", "-D", "INPUT", "-m", "comment", "--comment", "dra test", "-j", chain],
                           capture_output=True)  # fmt: skip
            subprocess.run([tool, "-t", "filter", "-X", chain], capture_output=True)


def test_a_directory_removed_during_the_walk_is_skipped(tmp_path, monkeypatch):
    """A pod cgroup the kubelet removes while a tear-down walks the tree (FileNotFoundError from scandir, seen in
    the registry rehearsal's tear-down) is skipped; the rest is listed children first."""
    (tmp_path / "kubepods" / "pod-gone").mkdir(parents=True)
    (tmp_path / "kubepods" / "pod-kept").mkdir()
    real = os.scandir

    def scandir(path):
        if str(path).endswith("pod-gone"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    pods = tmp_path / "kubepods"
    found = hostsys.dirs_under(tmp_path)
    assert found == [pods / "pod-kept", pods, tmp_path], found
