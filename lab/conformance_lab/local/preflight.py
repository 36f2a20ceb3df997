"""Pre-flight checks of the host before a local cluster starts; each failure names the fix.

Checks (local-cluster.md §3.9 checklist): root, cgroup layout, the six kubelet sysctls, /dev/kmsg, free
TCP ports, host limits (inotify instances and watches, task IDs: hostlimits.py), cached binaries for the requested
version, runc, CNI plugins, iptables, busybox.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
from pathlib import Path

from conformance.core.errors import ClusterUnavailable
from conformance_lab.local import hostlimits, hostsys
from conformance_lab.toolchain import cache, firstuse

# kubelet pkg/kubelet/cm/container_manager_linux.go setupKernelTunables (KernelTunableModify).
KUBELET_SYSCTLS = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
    "kernel/keys/root_maxkeys": "1000000",
    "kernel/keys/root_maxbytes": "25000000",
}
K8S_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl")
TOOL_BINARIES = (
    ("etcd", "etcd"),
    ("containerd", "containerd"),
    ("containerd", "containerd-shim-runc-v2"),
    ("containerd", "ctr"),
)
RUNC_CANDIDATES = ("/usr/sbin/runc", "/usr/bin/runc")
CNI_BIN_DIRS = ("/usr/lib/cni", "/opt/cni/bin")
CNI_PLUGINS = ("bridge", "host-local", "loopback")
CGROUP_V1_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer")


class PreflightError(ClusterUnavailable):
    """The host cannot run a local cluster. ``problems``: one line per failed check, each with its fix."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("local cluster pre-flight failed:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclasses.dataclass(frozen=True)
class HostFacts:
    """What the pre-flight found: binaries to use and host properties recorded in the state."""

    binaries: dict[str, str]
    runc: str
    cni_bin_dir: str
    cgroup: str


def cgroup_layout() -> str:
    """``v1`` (tmpfs at /sys/fs/cgroup, possibly hybrid), ``v2`` (cgroup2fs) or ``unknown``."""
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return "v2"
    if all(os.path.isdir(f"/sys/fs/cgroup/{c}") for c in ("cpu", "memory")):
        return "v1"
    return "unknown"


def port_free(port: int, host: str = "0.0.0.0") -> bool:
    """True when a TCP listener can bind ``host:port`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def check_ports(ports: dict[str, int]) -> list[str]:
    """One problem line per port already in use."""
    return [
        f"port {port} (for {name}) is in use; stop what listens there (`ss -ltnp 'sport = :{port}'`) "
        f"or pick another cluster slot"
        for name, port in ports.items()
        if not port_free(port)
    ]


def check_sysctls(fix: bool = True) -> list[str]:
    """Each kubelet sysctl must hold its value or be writable (written when ``fix``)."""
    problems = []
    for key, want in KUBELET_SYSCTLS.items():
        path = Path("/proc/sys") / key
        try:
            if path.read_text().strip() == want:
                continue
            if fix:
                hostsys.set_sysctl(key, want)  # the host's value is put back when the last cluster goes down
        except OSError as exc:
            problems.append(
                f"sysctl {key.replace('/', '.')} cannot be set to {want} ({exc}); the kubelet "
                f"refuses to start; run `sysctl -w {key.replace('/', '.')}={want}` as root"
            )
    return problems


def find_binaries(tag: str) -> tuple[dict[str, str], list[str]]:
    """Cached binary paths for Kubernetes ``tag`` and the pinned tools; plus CacheMiss problems."""
    found, problems = {}, []
    for name in K8S_BINARIES:
        try:
            found[name] = str(cache.k8s_binary(name, tag))
        except cache.CacheMiss as exc:
            problems.append(str(exc))
    for tool, name in TOOL_BINARIES:
        try:
            found[name] = str(cache.tool_binary(tool, name))
        except cache.CacheMiss as exc:
            problems.append(str(exc))
    return found, list(dict.fromkeys(problems))


def find_kwok() -> tuple[str | None, list[str]]:
    """The cached kwok binary (built on first use) or a problem naming `dra-conformance setup --all` /
    `make setup-all` (:data:`conformance_lab.toolchain.firstuse.SETUP_ALL`)."""
    try:
        return str(firstuse.tool_binary("kwok", "kwok")), []
    except cache.CacheMiss as exc:
        return None, [str(exc)]


def run(tag: str, ports: dict[str, int], need_kwok: bool = False, nodes: int = 0) -> HostFacts:
    """Run every check (host limits for ``nodes`` real nodes when ``nodes``); raises PreflightError listing all
    problems at once."""
    problems: list[str] = []
    if os.geteuid() != 0:
        problems.append("not running as root: the kubelet, containerd and kube-proxy need root; run with sudo")
    layout = cgroup_layout()
    if layout == "unknown":
        problems.append("no cgroup hierarchy at /sys/fs/cgroup; mount cgroup v1 controllers or cgroup2")
    elif layout == "v1":
        missing = [c for c in CGROUP_V1_CONTROLLERS if not os.path.isdir(f"/sys/fs/cgroup/{c}")]
        if missing:
            problems.append(f"cgroup v1 controllers missing: {', '.join(missing)}; mount them under /sys/fs/cgroup")
    if os.geteuid() == 0:
        problems += check_sysctls(fix=True)
    try:
        with open("/dev/kmsg", "rb"):
            pass
    except OSError as exc:
        problems.append(
            f"/dev/kmsg cannot be opened ({exc}); the kubelet's OOM watcher needs it "
            f"(workaround: `mount --bind /dev/null /dev/kmsg`)"
        )
    problems += check_ports(ports)
    if nodes:
        problems += hostlimits.check(nodes)
    binaries, missing = find_binaries(tag)
    problems += missing
    if need_kwok:
        kwok, kwok_problems = find_kwok()
        problems += kwok_problems
        if kwok:
            binaries["kwok"] = kwok
    runc = next((p for p in RUNC_CANDIDATES if os.access(p, os.X_OK)), None)
    if runc is None:
        problems.append("runc is not installed; run `apt-get install -y runc` (or make setup)")
    cni = next((d for d in CNI_BIN_DIRS if all(os.access(f"{d}/{p}", os.X_OK) for p in CNI_PLUGINS)), None)
    if cni is None:
        problems.append(
            "CNI plugins (bridge, host-local, loopback) not found in /usr/lib/cni or /opt/cni/bin; "
            "run `apt-get install -y containernetworking-plugins` (or make setup)"
        )
    for tool, pkg in (("iptables", "iptables"), ("ip", "iproute2"), ("mount", "mount")):
        if shutil.which(tool) is None:
            problems.append(f"`{tool}` is not installed; run `apt-get install -y {pkg}`")
    if problems:
        raise PreflightError(problems)
    return HostFacts(binaries=binaries, runc=runc or "", cni_bin_dir=cni or "", cgroup=layout)
