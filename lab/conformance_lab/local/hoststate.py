"""A snapshot of what a cluster could leave on this host, as sorted text lines per section, so two snapshots
(before ``cluster up``, after ``cluster down``) can be diffed (:mod:`conformance_lab.local.hostdiff`).

Sections (each line normalised so that only a real change differs; pids, ifindexes, MAC addresses, counters and
lifetimes are left out):

- ``iptables`` / ``ip6tables``: ``<table> <rule>`` of ``-S`` for filter, nat, mangle, raw, security; packet
  counters (``-c N N``, ``[N:N]``) dropped, per-container CNI chain names and container IDs replaced by ``<id>``;
- ``sysctls``: the keys a local or kind cluster writes (ip_forward, preflight.KUBELET_SYSCTLS, the
  kubelet's and kube-proxy's own writes: ``route_localnet``, conntrack), ``key=value``;
- ``links`` / ``addresses`` / ``routes``: ``ip -j link|addr|route`` (both families, every table);
- ``mounts``: mount points under the lab's directories, ``/run``, ``/var/lib/kubelet`` and ``/var/lib/cni``;
- ``processes``: our binaries (kubelet, containerd and its shims, etcd, kube-*, kwok, runc, drivers, node-mount
  holders) and every process in a cluster's cgroup, as ``<comm> cgroup=<path> <argv>``;
- ``cgroups``: the top-level cgroups of every hierarchy (the lab creates ``/dra-<cluster>-node-<i>``);
- ``ports``: listening TCP and bound UDP sockets of those processes or in the lab's port plan (config.py);
- ``files``: entries (three levels deep) of the lab's state and run directories and of the host paths a cluster
  writes (CNI results and IPAM, shim sockets, container log links, CDI and NRI directories).

``owners`` records which local clusters (and a kind runtime) were alive at capture time, each with the tokens
(directories, bridge names, cgroups, subnets, ports, chains) that attribute a line to it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from conformance_lab.local import hostsys
from conformance_lab.local.config import RUN_ROOT, STATE_ROOT
from conformance_lab.local.hostowners import owners_now

SECTIONS = ("iptables", "ip6tables", "sysctls", "links", "addresses", "routes", "mounts", "processes", "cgroups")
SECTIONS += ("ports", "files")
IPTABLES_TABLES = ("filter", "nat", "mangle", "raw", "security")
LAB_ROOT = STATE_ROOT.parent  # /var/lib/dra-conformance (its kind/ holds the kind runtime's image store)
SYSCTLS = (
    "net.ipv4.ip_forward",
    "net.ipv6.conf.all.forwarding",
    "net.ipv6.conf.default.forwarding",
    "net.ipv4.conf.all.route_localnet",
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
    "net.netfilter.nf_conntrack_max",
    "net.netfilter.nf_conntrack_tcp_timeout_established",
    "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "kernel.pid_max",
    "fs.inotify.max_user_instances",
    "fs.inotify.max_user_watches",
)
MOUNT_ROOTS = (LAB_ROOT, Path("/run"), Path("/var/lib/kubelet"), Path("/var/lib/cni"), Path("/etc/cdi"))
FILE_ROOTS = (
    LAB_ROOT,
    RUN_ROOT,
    Path("/run/dra-conformance-kind"),
    Path("/run/containerd/s"),
    Path("/var/lib/cni/results"),
    Path("/var/lib/cni/networks"),
    Path("/var/log/containers"),
    Path("/run/cdi"),
    Path("/etc/cdi"),
    Path("/run/nri"),
    Path("/run/netns"),
)
FILE_SKIP = (LAB_ROOT / "kind",)  # the kind runtime's content store: cached images, not a cluster's state
FILE_DEPTH = 3
OUR_COMMS = ("kubelet", "containerd", "containerd-shim", "etcd", "kube-", "kwok", "runc", "dra-example-kub")
OUR_ARGV = ("-m reference_driver", str(LAB_ROOT), str(RUN_ROOT), "dra-conformance-kind")  # argv joined by spaces
LAB_PORTS = (range(6443, 6453), range(20000, 21000))  # config.py: apiserver 6443+s, base 20000+100s


@dataclasses.dataclass
class Snapshot:
    """``sections``: section name -> sorted normalised lines; ``owners``: owner label -> attribution tokens
    (hostowners.py); ``taken``: ISO-8601 UTC time of the capture."""

    taken: str
    sections: dict[str, list[str]]
    owners: dict[str, list[str]]

    def save(self, path: Path) -> None:
        """Write as JSON (parent directories created)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dataclasses.asdict(self), indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: Path) -> Snapshot:
        """Read a file :meth:`save` wrote. Raises ValueError naming the file when it is not one."""
        try:
            data = json.loads(Path(path).read_text())
            return cls(taken=data["taken"], sections=data["sections"], owners=data["owners"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{path} is not a host-state snapshot ({exc}); write one with `cluster host-state --save FILE`"
            ) from None


def _run(argv: list[str]) -> str:
    if not shutil.which(argv[0]):
        return ""
    return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout


def capture() -> Snapshot:
    """Read every section from the host now (root needed for iptables and other users' /proc entries)."""
    procs = our_processes()
    links = _run(["ip", "-j", "link", "show"])
    masters = {d.get("ifname", ""): d["master"] for d in _json(links) if d.get("master")}
    sections = {
        "iptables": [ln for t in IPTABLES_TABLES for ln in iptables_lines(t, _run(["iptables", "-t", t, "-S"]))],
        "ip6tables": [ln for t in IPTABLES_TABLES for ln in iptables_lines(t, _run(["ip6tables", "-t", t, "-S"]))],
        "sysctls": sysctl_lines(read_sysctls(SYSCTLS)),
        "links": link_lines(links),
        "addresses": addr_lines(_run(["ip", "-j", "addr", "show"])),
        "routes": route_lines(_run(["ip", "-j", "-4", "route", "show", "table", "all"]), masters)
        + route_lines(_run(["ip", "-j", "-6", "route", "show", "table", "all"]), masters),
        "mounts": mount_lines(Path("/proc/self/mountinfo").read_text(), MOUNT_ROOTS),
        "processes": sorted(line for _pid, line in procs),
        "cgroups": cgroup_lines(hostsys.cgroup_hierarchies()),
        "ports": port_lines(dict(procs)),
        "files": loopback_owners(file_lines(FILE_ROOTS, FILE_DEPTH, FILE_SKIP, unix_listeners(dict(procs)))),
    }
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return Snapshot(taken=now, sections={k: sorted(v) for k, v in sections.items()}, owners=owners_now())


_COUNTERS = re.compile(r" -c \d+ \d+| \[\d+:\d+\]")
_CNI_CHAIN = re.compile(r"CNI-[0-9a-f]{24}")
_CONTAINER_ID = re.compile(r'id: \\?"[0-9a-f]{64}\\?"')
_CNI_JUMP = re.compile(r'name: \\?"([^"\\]+)\\?" .*-j (CNI-[0-9a-f]{24})')


def iptables_lines(table: str, text: str) -> list[str]:
    """``<table> <rule>`` for each line of ``iptables -t <table> -S`` output ``text``, counters dropped, container
    IDs replaced by ``<id>`` and each per-container CNI chain named by the network of the rule that jumps to it
    (``CNI-<dra-c1-0>``; ``CNI-<id>`` when no rule does) so that every line of it names its cluster."""
    nets = {m.group(2): m.group(1) for m in map(_CNI_JUMP.search, text.splitlines()) if m}
    out = []
    for raw in text.splitlines():
        line = _COUNTERS.sub("", raw.strip())
        if line:
            line = _CNI_CHAIN.sub(lambda m: f"CNI-<{nets.get(m.group(0), 'id')}>", line)
            out.append(f"{table} " + _CONTAINER_ID.sub('id: "<id>"', line))
    return out


def read_sysctls(keys: tuple[str, ...]) -> dict[str, str]:
    """``{key: value}`` from /proc/sys (whitespace collapsed; unreadable or missing keys left out)."""
    out = {}
    for key in keys:
        try:
            out[key] = " ".join((Path("/proc/sys") / key.replace(".", "/")).read_text().split())
        except OSError:
            pass
    return out


def sysctl_lines(values: dict[str, str]) -> list[str]:
    """``key=value`` lines."""
    return [f"{k}={v}" for k, v in values.items()]


def _json(text: str) -> list[dict]:
    try:
        data = json.loads(text or "[]")
    except ValueError:
        return []
    return [d for d in data if isinstance(d, dict)]


def link_lines(text: str) -> list[str]:
    """From ``ip -j link show``: ``<name> type=<link_type> master=<bridge or -> up=<yes|no> mtu=<n>``."""
    return [
        f"{d.get('ifname')} type={d.get('link_type')} master={d.get('master', '-')} "
        f"up={'yes' if 'UP' in d.get('flags', []) else 'no'} mtu={d.get('mtu')}"
        for d in _json(text)
    ]


def addr_lines(text: str) -> list[str]:
    """From ``ip -j addr show``: ``<name> master=<bridge or -> <family> <address>/<prefix>``, one per address."""
    out = []
    for d in _json(text):
        for a in d.get("addr_info", []):
            where = f"{d.get('ifname')} master={d.get('master', '-')}"
            out.append(f"{where} {a.get('family')} {a.get('local')}/{a.get('prefixlen')}")
    return out


_ROUTE_KEYS = ("type", "dst", "gateway", "dev", "table", "protocol", "scope", "prefsrc", "metric")


def route_lines(text: str, masters: dict[str, str] | None = None) -> list[str]:
    """From ``ip -j route show table all``: ``key=value`` of the stable keys (lifetimes and flags left out), plus
    ``master=<bridge>`` when ``masters`` (link name -> its bridge) has the route's device (a pod's veth)."""
    masters = masters or {}
    return [
        " ".join(f"{k}={d[k]}" for k in _ROUTE_KEYS if k in d)
        + (f" master={masters[d['dev']]}" if d.get("dev") in masters else "")
        for d in _json(text)
    ]


def mount_lines(mountinfo: str, roots: tuple[Path, ...]) -> list[str]:
    """``<mount point> <fstype> <source>`` of each /proc/self/mountinfo line at or below one of ``roots``."""
    prefixes = [str(r).rstrip("/") for r in roots]
    out = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        point = hostsys._unescape(fields[4])
        if any(point == p or point.startswith(p + "/") for p in prefixes):
            fstype, source = line.split(" - ", 1)[1].split()[:2]
            out.append(f"{point} {fstype} {source}")
    return out


def process_line(comm: str, argv: list[str], cgroup: str) -> str | None:
    """``<comm> cgroup=<path> <argv>`` when the process is one of ours (:data:`OUR_COMMS`, an argv naming the
    lab's directories or a driver, or a cluster's cgroup ``/dra-...``); else None. ``cgroup`` is the first path of
    /proc/PID/cgroup."""
    joined = " ".join(argv)
    ours = comm.startswith(OUR_COMMS) or any(a in joined for a in OUR_ARGV) or cgroup.startswith("/dra-")
    if not ours:
        return None
    return f"{comm} cgroup={cgroup} {re.sub(r'/tmp/[^ /]+', '/tmp/<tmp>', joined)}".rstrip()


def _cgroup_of(pid: str) -> str:
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return ""
    paths = [ln.split(":", 2)[2] for ln in lines if ln.count(":") >= 2]
    return next((p for p in paths if p.startswith("/dra-")), paths[0] if paths else "")


def our_processes() -> list[tuple[int, str]]:
    """``(pid, line)`` of every running process :func:`process_line` calls ours (this process left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            argv = [a for a in (entry / "cmdline").read_bytes().decode(errors="replace").split("\0") if a]
        except OSError:
            continue
        line = process_line(comm, argv, _cgroup_of(entry.name)) if argv else None
        if line:
            found.append((int(entry.name), line))
    return found


def cgroup_lines(hierarchies: list[Path]) -> list[str]:
    """``<hierarchy>/<name>`` of every top-level cgroup directory."""
    return [str(h / d.name) for h in hierarchies if h.is_dir() for d in h.iterdir() if d.is_dir()]


def listening(proc_net: str, proto: str) -> list[tuple[str, int]]:
    """``(address:port, socket inode)`` of listening TCP (state 0A) or bound UDP sockets in a /proc/net/{tcp,
    tcp6,udp,udp6} text; IPv4 addresses dotted, IPv6 ones as the kernel's 32 hex digits."""
    out = []
    for line in proc_net.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or (proto.startswith("tcp") and fields[3] != "0A"):
            continue
        addr, port = fields[1].split(":")
        if len(addr) == 8:
            addr = ".".join(str(b) for b in reversed(bytes.fromhex(addr)))
        out.append((f"{addr}:{int(port, 16)}", int(fields[9])))
    return out


def _socket_owners(pids: set[int]) -> dict[int, int]:
    inodes = {}
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes[int(target[8:-1])] = pid
        except OSError:
            continue
    return inodes


def port_lines(procs: dict[int, str]) -> list[str]:
    """``<proto> <address:port> by <process line>`` of sockets owned by a process of ``procs`` (pid -> its
    :func:`process_line`, which names its cluster) or on a port of :data:`LAB_PORTS` (``by ?`` when the owner is
    not one of ``procs``)."""
    owners = _socket_owners(set(procs))
    out = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        try:
            text = Path(f"/proc/net/{proto}").read_text()
        except OSError:
            continue
        for addr, inode in listening(text, proto):
            port = int(addr.rsplit(":", 1)[1])
            if inode in owners or any(port in r for r in LAB_PORTS):
                out.append(f"{proto} {addr} by {procs[owners[inode]] if inode in owners else '?'}")
    return out


def unix_sockets(proc_net_unix: str) -> dict[str, int]:
    """``{path: inode}`` of the bound unix sockets with a path in a /proc/net/unix text."""
    found = {}
    for line in proc_net_unix.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith("/"):
            found[fields[7]] = int(fields[6])
    return found


def unix_listeners(procs: dict[int, str]) -> dict[str, str]:
    """``{socket path: process line}`` of the unix sockets ``procs`` (pid -> :func:`process_line`) hold: names
    the cluster of a shim socket in /run/containerd/s, whose file name is only a hash."""
    paths: dict[str, int] = {}
    readers: dict[str, int] = {}  # one process per network namespace (a node's shims: in the node's, netns.py)
    for pid in (os.getpid(), *procs):
        with contextlib.suppress(OSError):
            readers.setdefault(os.readlink(f"/proc/{pid}/ns/net"), pid)
    for pid in readers.values():
        with contextlib.suppress(OSError):
            paths.update(unix_sockets(Path(f"/proc/{pid}/net/unix").read_text()))
    owners = _socket_owners(set(procs))
    return {path: procs[owners[inode]] for path, inode in paths.items() if inode in owners}


_RESULT = re.compile(r"^/var/lib/cni/results/(.+)-([0-9a-f]{64})-(\w+)$")


def loopback_owners(lines: list[str]) -> list[str]:
    """``lines`` with each ``cni-loopback-<sandbox>-lo`` CNI result (containerd's loopback network, named by the
    pod sandbox only) followed by `` (sandbox of <network>)`` when a result of the same sandbox names the pod
    network (``dra-<cluster>-<node>-<sandbox>-eth0``)."""
    nets = {m.group(2): m.group(1) for m in map(_RESULT.match, lines) if m and m.group(1) != "cni-loopback"}
    out = []
    for line in lines:
        m = _RESULT.match(line)
        owned = m and m.group(1) == "cni-loopback" and m.group(2) in nets
        out.append(f"{line} (sandbox of <{nets[m.group(2)]}>)" if owned else line)
    return out


def _annotation(path: Path, held_by: dict[str, str]) -> str:
    if str(path) in held_by:
        return f" by {held_by[str(path)]}"
    try:
        return f" -> {os.readlink(path)}" if path.is_symlink() else ""  # a container log link names its node dir
    except OSError:
        return ""


def file_lines(
    roots: tuple[Path, ...], depth: int, skip: tuple[Path, ...] = (), held_by: dict[str, str] | None = None
) -> list[str]:
    """Every path at most ``depth`` levels below each existing root (directories end with ``/``), except below
    ``skip``; a socket in ``held_by`` (path -> the line of the process holding it) gets `` by <that line>``, a
    symbolic link `` -> <its target>``."""
    held_by = held_by or {}
    out = []

    def walk(d: Path, level: int) -> None:
        try:
            entries = sorted(d.iterdir())
        except OSError:
            return
        for e in entries:
            is_dir = e.is_dir() and not e.is_symlink()
            out.append(f"{e}/" if is_dir else str(e) + _annotation(e, held_by))
            if is_dir and level < depth and e not in skip:
                walk(e, level + 1)

    for root in roots:
        if root.is_dir() and root not in skip:
            walk(root, 1)
    return out
