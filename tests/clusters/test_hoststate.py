"""Host-state snapshot normalisation (conformance_lab.local.hoststate) on outputs captured from this lab's host:
``iptables -S``, ``ip -j link|addr|route``, /proc/self/mountinfo, /proc/net/tcp, /proc/PID/cmdline."""

import json

import pytest
import yaml
from conformance_lab.local import hoststate, hostsys

CONTAINER = "5f0c" * 16
CHAIN = "CNI-8a9c1f0e2b3d4c5a6f7e8d9c"
COMMENT = f'--comment "name: \\"dra-c89ef-0\\" id: \\"{CONTAINER}\\""'
# iptables -t nat -S with a local cluster's bridge plugin chain (-c: iptables -S -v style counters)
NAT = f"""-P PREROUTING ACCEPT
-N {CHAIN}
-N KUBE-SERVICES
-A POSTROUTING -s 10.88.32.4/32 -m comment {COMMENT} -j {CHAIN}
-A {CHAIN} -d 10.88.32.0/24 -c 12 3400 -j ACCEPT
-N CNI-00000000000000000000abcd
-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES

"""


def test_iptables_lines_keep_rules_and_drop_counters_and_container_ids():
    lines = hoststate.iptables_lines("nat", NAT)
    assert lines[0] == "nat -P PREROUTING ACCEPT"
    assert "nat -N CNI-<dra-c89ef-0>" in lines and "nat -N KUBE-SERVICES" in lines
    assert "nat -N CNI-<id>" in lines  # no rule jumps to it: no network to name it by
    normalised = '--comment "name: \\"dra-c89ef-0\\" id: "<id>""'
    assert f"nat -A POSTROUTING -s 10.88.32.4/32 -m comment {normalised} -j CNI-<dra-c89ef-0>" in lines
    assert "nat -A CNI-<dra-c89ef-0> -d 10.88.32.0/24 -j ACCEPT" in lines
    assert len(lines) == 7  # the empty line is not a rule


def test_iptables_save_chain_counters_are_dropped():
    assert hoststate.iptables_lines("filter", ":KUBE-FORWARD - [7:420]") == ["filter :KUBE-FORWARD -"]


LINKS = json.dumps(
    [
        {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536, "link_type": "loopback"},
        {"ifindex": 9, "ifname": "dc1a2b3cn0", "flags": ["BROADCAST", "UP"], "mtu": 1500, "link_type": "ether"},
        {"ifname": "veth0f3a", "flags": ["UP"], "mtu": 1500, "link_type": "ether", "master": "dc1a2b3cn0"},
        {"ifindex": 2, "ifname": "ifb0", "flags": ["BROADCAST", "NOARP"], "mtu": 1500, "link_type": "ether"},
    ]
)


def test_link_lines_leave_out_index_and_address_and_name_the_bridge():
    assert hoststate.link_lines(LINKS) == [
        "lo type=loopback master=- up=yes mtu=65536",
        "dc1a2b3cn0 type=ether master=- up=yes mtu=1500",
        "veth0f3a type=ether master=dc1a2b3cn0 up=yes mtu=1500",
        "ifb0 type=ether master=- up=no mtu=1500",
    ]


def test_addr_lines_one_per_address_without_lifetimes():
    text = json.dumps(
        [
            {
                "ifname": "lo",
                "addr_info": [
                    {"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "valid_life_time": 4294967295},
                    {"family": "inet6", "local": "::1", "prefixlen": 128},
                ],
            },
            {
                "ifname": "veth0f3a",
                "master": "dc1a2b3cn0",
                "addr_info": [{"family": "inet6", "local": "fe80::1", "prefixlen": 64}],
            },
        ]
    )
    assert hoststate.addr_lines(text) == [
        "lo master=- inet 127.0.0.1/8",
        "lo master=- inet6 ::1/128",
        "veth0f3a master=dc1a2b3cn0 inet6 fe80::1/64",
    ]


def test_route_lines_keep_the_stable_keys():
    text = json.dumps(
        [
            {"dst": "default", "gateway": "192.0.2.1", "dev": "eth0", "flags": []},
            {"type": "local", "dst": "127.0.0.1", "dev": "lo", "table": "local", "protocol": "kernel", "scope": "host",
             "prefsrc": "127.0.0.1", "flags": []},
            {"dst": "fe80::/64", "dev": "eth0", "protocol": "kernel", "metric": 256, "pref": "medium", "expires": 3},
        ]
    )  # fmt: skip
    assert hoststate.route_lines(text, {"eth0": "br0"})[0] == "dst=default gateway=192.0.2.1 dev=eth0 master=br0"
    assert hoststate.route_lines(text) == [
        "dst=default gateway=192.0.2.1 dev=eth0",
        "type=local dst=127.0.0.1 dev=lo table=local protocol=kernel scope=host prefsrc=127.0.0.1",
        "dst=fe80::/64 dev=eth0 protocol=kernel metric=256",
    ]


def test_garbage_ip_output_reads_as_nothing():
    assert hoststate.link_lines("") == [] and hoststate.route_lines("not json") == []


MOUNTINFO = """22 1 0:21 / / rw,relatime shared:1 - overlay overlay rw
88 22 0:45 / /run rw,nosuid shared:7 - tmpfs tmpfs rw
301 88 0:77 / /run/netns/cni-1f2e rw shared:90 - nsfs nsfs rw
302 22 0:78 / /var/lib/dra-conformance/clusters/c1/node-0/kubelet/pods/u/volumes/a\\040b rw - tmpfs tmpfs rw
303 22 0:79 / /var/lib/dra-conformancex rw - tmpfs tmpfs rw
"""


def test_mount_lines_under_the_roots_only_unescaped():
    roots = (hoststate.LAB_ROOT, hoststate.Path("/run"))
    assert hoststate.mount_lines(MOUNTINFO, roots) == [
        "/run tmpfs tmpfs",
        "/run/netns/cni-1f2e nsfs nsfs",
        "/var/lib/dra-conformance/clusters/c1/node-0/kubelet/pods/u/volumes/a b tmpfs tmpfs",
    ]


@pytest.mark.parametrize(
    ("comm", "argv", "cgroup", "ours"),
    [
        ("kubelet", ["/c/kubelet", "--config", "/var/lib/dra-conformance/clusters/c1/node-0/k.yaml"], "/", True),
        ("containerd-shim", ["/cache/containerd-shim-runc-v2", "-namespace", "k8s.io"], "/", True),
        ("kube-apiserver", ["/cache/kube-apiserver"], "/", True),
        ("python3", ["python3", "-m", "reference_driver", "--node", "n"], "/", True),
        ("pause", ["/pause"], "/dra-c1-node-0/kubepods/besteffort/pod1/abc", True),
        ("sleep", ["sleep", "infinity"], "/dra-c1-node-1/kubepods/pod2/def", True),
        ("bash", ["bash", "-c", "make test"], "/", False),
        ("python", ["python", "-m", "pytest", "tests/reference_driver"], "/", False),
        ("python", [".venv/bin/dra-conformance", "run"], "/", False),
    ],
)
def test_process_line_picks_our_binaries_and_cluster_cgroups(comm, argv, cgroup, ours):
    line = hoststate.process_line(comm, argv, cgroup)
    assert (line is not None) == ours
    if ours:
        assert line.startswith(f"{comm} cgroup={cgroup} ")


def test_process_line_normalises_temporary_paths():
    line = hoststate.process_line("kwok", ["kwok", "--kubeconfig", "/tmp/tmpa1b2/kc", "--x"], "/")
    assert line == "kwok cgroup=/ kwok --kubeconfig /tmp/<tmp>/kc --x"


# /proc/net/tcp lines as the kernel writes them, cut after the inode field (the parser reads fields 1, 3, 9)
PROC_NET_TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 335 1
   1: 0100007F:A81D 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6385488 2
   2: 0100007F:192B 0100007F:C266 01 00000000:00000000 00:00000000 00000000     0        0 7001 1
"""
PROC_NET_TCP6 = (
    "  sl  local_address  remote_address st tx_queue rx_queue tr\n"
    "   0: 00000000000000000000000000000000:192B 00000000000000000000000000000000:0000 0A 00000000:00000000"
    " 00:00000000 00000000     0        0 9001 1\n"
)


def test_listening_reads_listen_sockets_only_for_tcp():
    assert hoststate.listening(PROC_NET_TCP, "tcp") == [("0.0.0.0:2024", 335), ("127.0.0.1:43037", 6385488)]
    assert hoststate.listening(PROC_NET_TCP6, "tcp6") == [("00000000000000000000000000000000:6443", 9001)]
    assert len(hoststate.listening(PROC_NET_TCP, "udp")) == 3  # every bound UDP socket counts


def test_file_lines_walk_to_the_depth_and_skip(tmp_path):
    (tmp_path / "a" / "b" / "c" / "d").mkdir(parents=True)
    (tmp_path / "a" / "f").write_text("x")
    (tmp_path / "skip" / "inner").mkdir(parents=True)
    lines = hoststate.file_lines((tmp_path, tmp_path / "missing"), 3, (tmp_path / "skip",))
    assert lines == [
        f"{tmp_path}/a/",
        f"{tmp_path}/a/b/",
        f"{tmp_path}/a/b/c/",
        f"{tmp_path}/a/f",
        f"{tmp_path}/skip/",
    ]


def test_cgroup_lines_are_the_top_level_directories(tmp_path):
    for d in ("cpu/dra-c1-node-0/kubepods", "cpu/user.slice", "memory/dra-c1-node-0"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "cpu" / "cgroup.procs").write_text("1")
    assert sorted(hoststate.cgroup_lines([tmp_path / "cpu", tmp_path / "memory", tmp_path / "none"])) == [
        f"{tmp_path}/cpu/dra-c1-node-0",
        f"{tmp_path}/cpu/user.slice",
        f"{tmp_path}/memory/dra-c1-node-0",
    ]


def test_snapshot_round_trips_and_a_bad_file_names_itself_and_the_fix(tmp_path):
    snap = hoststate.Snapshot(taken="t", sections={"links": ["lo type=loopback"]}, owners={"cluster c1": ["c1-"]})
    snap.save(tmp_path / "s" / "a.json")
    assert hoststate.Snapshot.load(tmp_path / "s" / "a.json") == snap
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match=r"bad\.json is not a host-state snapshot .*--save FILE"):
        hoststate.Snapshot.load(tmp_path / "bad.json")


def test_kube_proxy_is_configured_to_write_no_sysctl(tmp_path, monkeypatch):
    from conformance_lab.local import config, control_plane

    monkeypatch.setattr(config, "STATE_ROOT", tmp_path)
    lay = config.Layout(name="c1", slot=3, nodes=1, log_dir=tmp_path)
    lay.state_dir.mkdir()
    argv = control_plane.kube_proxy("/c/kube-proxy", lay, tmp_path / "kc", 0)
    cfg = yaml.safe_load((lay.state_dir / "kube-proxy-0.yaml").read_text())
    assert argv[1] == f"--config={lay.state_dir / 'kube-proxy-0.yaml'}"
    assert cfg["hostnameOverride"] == "c1-node-0"
    assert cfg["iptables"] == {"localhostNodePorts": False}  # else kube-proxy sets route_localnet=1 for good
    assert cfg["conntrack"]["maxPerCore"] == 0 and cfg["conntrack"]["min"] == 0  # no nf_conntrack_max write


def test_a_sysctl_set_for_the_kubelet_is_put_back_when_the_last_cluster_goes(tmp_path, monkeypatch):
    monkeypatch.setattr(hostsys, "PROC_SYS", tmp_path / "sys")
    monkeypatch.setattr(hostsys, "SYSCTLS_ORIG", tmp_path / "run" / "sysctls.orig.json")
    (tmp_path / "sys" / "vm").mkdir(parents=True)
    (tmp_path / "sys" / "vm" / "overcommit_memory").write_text("0\n")
    hostsys.set_sysctl("vm/overcommit_memory", "1")
    hostsys.set_sysctl("vm/overcommit_memory", "1")  # a second cluster: the host's value stays recorded
    assert (tmp_path / "sys" / "vm" / "overcommit_memory").read_text() == "1"
    assert hostsys.restore_sysctls() == []
    assert (tmp_path / "sys" / "vm" / "overcommit_memory").read_text() == "0"
    assert not (tmp_path / "run" / "sysctls.orig.json").exists()
    assert hostsys.restore_sysctls() == []  # nothing recorded: nothing to do


PROC_NET_UNIX = """Num       RefCount Protocol Flags    Type St Inode Path
0000000000000000: 00000002 00000000 00010000 0001 01 41001 /run/containerd/s/9f3e
0000000000000000: 00000003 00000000 00000000 0001 03 41002
0000000000000000: 00000002 00000000 00010000 0001 01 41003 @/containerd-shim/abstract
"""


def test_unix_sockets_with_a_path_and_a_held_shim_socket_names_its_holder(tmp_path):
    assert hoststate.unix_sockets(PROC_NET_UNIX) == {"/run/containerd/s/9f3e": 41001}
    (tmp_path / "9f3e").write_text("")
    held = {str(tmp_path / "9f3e"): "containerd-shim cgroup=/ x -address /run/dra-conformance/c1/node-0/c.sock"}
    assert hoststate.file_lines((tmp_path,), 1, (), held) == [f"{tmp_path}/9f3e by {held[str(tmp_path / '9f3e')]}"]


def test_a_symlink_names_its_target(tmp_path):
    (tmp_path / "pod.log").symlink_to("/var/lib/dra-conformance/clusters/c1/node-0/pod-logs/p/0.log")
    assert hoststate.file_lines((tmp_path,), 1) == [
        f"{tmp_path}/pod.log -> /var/lib/dra-conformance/clusters/c1/node-0/pod-logs/p/0.log"
    ]


def test_a_loopback_cni_result_names_the_network_of_its_sandbox():
    a, b = "a1" * 32, "b2" * 32
    lines = [
        f"/var/lib/cni/results/cni-loopback-{a}-lo",
        f"/var/lib/cni/results/cni-loopback-{b}-lo",
        f"/var/lib/cni/results/dra-c1-0-{a}-eth0",
    ]
    assert hoststate.loopback_owners(lines) == [
        f"/var/lib/cni/results/cni-loopback-{a}-lo (sandbox of <dra-c1-0>)",
        f"/var/lib/cni/results/cni-loopback-{b}-lo",  # its pod network's result is gone: nobody to name
        f"/var/lib/cni/results/dra-c1-0-{a}-eth0",
    ]
