"""Host-level setup and cleanup of a local cluster: mount propagation, per-node cgroup roots, mounts under
the cluster directories, CNI bridges, iptables chains, sysctls. Every function is idempotent.

Sources: local-cluster.md §0.2 (``mount --make-rshared /``), containernetworking/plugins bridge +
ipMasq (chains ``CNI-<hash>`` with comment ``name: "<net>" id: "<container>"``), kube-proxy ``--cleanup``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _run(argv: list[str], check: bool = False) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=60)


def make_root_rshared() -> None:
    """``mount --make-rshared /`` so kubelet volume mounts propagate into containers. Raises on failure."""
    proc = _run(["mount", "--make-rshared", "/"])
    if proc.returncode != 0:
        raise RuntimeError(f"`mount --make-rshared /` failed: {proc.stderr.strip()}")


_IP_FORWARD = Path("/proc/sys/net/ipv4/ip_forward")
_IP_FORWARD_ORIG = Path("/run/dra-conformance/ip_forward.orig")


def restore_ip_forward() -> None:
    """Put back the host's original ip_forward when a local cluster made before network namespaces recorded
    it (/run/dra-conformance/ip_forward.orig); call when the last local cluster goes down."""
    try:
        _IP_FORWARD.write_text(_IP_FORWARD_ORIG.read_text().strip())
        _IP_FORWARD_ORIG.unlink()
    except OSError:
        pass


PROC_SYS = Path("/proc/sys")
SYSCTLS_ORIG = Path("/run/dra-conformance/sysctls.orig.json")


def set_sysctl(key: str, value: str) -> None:
    """Write ``value`` to ``/proc/sys/<key>`` (``key`` as a path: ``vm/overcommit_memory``). The host's value
    before the first local cluster changed it is kept in /run/dra-conformance/sysctls.orig.json (the first writer
    of a key wins) for :func:`restore_sysctls`. Call under the host lock. Raises OSError from /proc/sys."""
    path = PROC_SYS / key
    before = path.read_text().strip()
    try:
        orig = json.loads(SYSCTLS_ORIG.read_text())
    except (OSError, ValueError):
        orig = {}
    if key not in orig:
        orig[key] = before
        SYSCTLS_ORIG.parent.mkdir(parents=True, exist_ok=True)
        SYSCTLS_ORIG.write_text(json.dumps(orig, indent=1, sort_keys=True))
    path.write_text(value)


def restore_sysctls() -> list[str]:
    """Put back every sysctl :func:`set_sysctl` recorded and drop the record (call when the last local cluster
    goes down). Returns ``key: error`` for each that could not be written (the record is then kept)."""
    try:
        orig = json.loads(SYSCTLS_ORIG.read_text())
    except (OSError, ValueError):
        return []
    failed = []
    for key, value in orig.items():
        try:
            (PROC_SYS / key).write_text(value)
        except OSError as exc:
            failed.append(f"{key}: {exc}")
    if not failed:
        SYSCTLS_ORIG.unlink(missing_ok=True)
    return failed


def cgroup_hierarchies() -> list[Path]:
    """Mounted cgroup hierarchies (v1 controllers, the named systemd one, and unified/v2)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        parts = line.split(" - ")
        if len(parts) == 2 and parts[1].split()[0] in ("cgroup", "cgroup2"):
            found.append(Path(line.split()[4]))
    return found


def create_cgroup_root(name: str) -> None:
    """Create ``/<name>`` in every hierarchy (the kubelet requires cgroupRoot to exist); cpuset gets the
    parent's cpus/mems so tasks can join."""
    for hier in cgroup_hierarchies():
        path = hier / name.strip("/")
        path.mkdir(exist_ok=True)
        if (hier / "cpuset.cpus").exists() and (path / "cpuset.cpus").exists():
            for f in ("cpuset.cpus", "cpuset.mems"):
                if not (path / f).read_text().strip():
                    (path / f).write_text((hier / f).read_text().strip())


def cgroup_pids(name: str) -> set[int]:
    """Every pid in the cgroup subtree ``/<name>`` of any hierarchy."""
    pids: set[int] = set()
    for hier in cgroup_hierarchies():
        root = hier / name.strip("/")
        if not root.is_dir():
            continue
        for d in dirs_under(root):
            try:
                pids.update(int(p) for p in (d / "cgroup.procs").read_text().split())
            except OSError:
                pass
    return pids


def dirs_under(root: Path) -> list[Path]:
    """``root`` and every directory below it, deepest first. A directory removed during the walk (a pod's cgroup
    that its kubelet deletes while a tear-down reads the tree) is skipped, not an error (os.walk without
    onerror; Path.rglob raised FileNotFoundError there)."""
    return [Path(d) for d, _, _ in os.walk(root, topdown=False)]


def kill_cgroup(name: str, timeout: float = 15.0) -> set[int]:
    """SIGKILL every process under ``/<name>`` until none remain; returns survivors (empty on success)."""
    deadline = time.monotonic() + timeout
    pids = cgroup_pids(name)
    while pids and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.1)
        pids = cgroup_pids(name)
    return pids


def remove_cgroup_root(name: str) -> list[str]:
    """rmdir the subtree ``/<name>`` bottom-up in every hierarchy; returns the paths that stayed."""
    left = []
    for hier in cgroup_hierarchies():
        root = hier / name.strip("/")
        if not root.is_dir():
            continue
        for d in dirs_under(root):  # children before their parent
            for _ in range(20):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
            if d.exists():
                left.append(str(d))
    return left


def _unescape(path: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def mounts_under(*dirs: Path) -> list[str]:
    """Mount points at or below any of ``dirs`` (from /proc/self/mountinfo)."""
    prefixes = [str(d).rstrip("/") for d in dirs]
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = _unescape(line.split()[4])
        if any(point == p or point.startswith(p + "/") for p in prefixes):
            found.append(point)
    return found


def unmount_under(*dirs: Path) -> list[str]:
    """Lazily unmount everything below ``dirs``, deepest first; returns mount points that remain."""
    for _ in range(5):
        points = mounts_under(*dirs)
        if not points:
            return []
        for point in sorted(set(points), key=lambda p: p.count("/"), reverse=True):
            _run(["umount", "-l", point])
    return mounts_under(*dirs)


def links() -> dict[str, str]:
    """Interface name -> ``master`` name ('' when none), from ``ip -o link``."""
    out = _run(["ip", "-o", "link", "show"]).stdout
    result = {}
    for line in out.splitlines():
        m = re.match(r"^\d+: ([^:@]+)(?:@[^:]+)?: ", line)
        if m:
            master = re.search(r" master (\S+)", line)
            result[m.group(1)] = master.group(1) if master else ""
    return result


def delete_bridge(bridge: str) -> None:
    """Delete ``bridge`` and any veth still attached to it."""
    for name, master in links().items():
        if master == bridge:
            _run(["ip", "link", "del", name])
    _run(["ip", "link", "del", bridge])


def cni_chains_for(networks: list[str]) -> list[tuple[str, str]]:
    """(rule, chain) pairs of nat POSTROUTING jumps the bridge plugin's ipMasq made for ``networks``."""
    out = _run(["iptables", "-t", "nat", "-S", "POSTROUTING"]).stdout
    pairs = []
    for line in out.splitlines():
        if any(f'name: \\"{n}\\"' in line or f'name: "{n}"' in line for n in networks):
            m = re.search(r"-j (CNI-\S+)", line)
            if m:
                pairs.append((line, m.group(1)))
    return pairs


def delete_cni_chains(networks: list[str]) -> None:
    """Remove the POSTROUTING jumps and the CNI-* chains of ``networks`` (left by killed pods)."""
    for rule, chain in cni_chains_for(networks):
        subprocess.run(
            ["sh", "-c", "iptables -t nat " + rule.replace("-A ", "-D ", 1)], capture_output=True, text=True, timeout=30
        )
        _run(["iptables", "-t", "nat", "-F", chain])
        _run(["iptables", "-t", "nat", "-X", chain])


def iptables_chains(prefixes: tuple[str, ...] = ("KUBE-", "CNI-")) -> list[str]:
    """Chain names (in any table) starting with one of ``prefixes``, as ``table/chain``."""
    chains = []
    for table in ("filter", "nat", "mangle"):
        out = _run(["iptables", "-t", table, "-S"]).stdout
        for line in out.splitlines():
            if line.startswith("-N "):
                name = line.split()[1]
                if name.startswith(prefixes):
                    chains.append(f"{table}/{name}")
    return chains


def delete_chains(prefix: str = "KUBE-") -> None:
    """Remove every iptables and ip6tables rule jumping to, and every chain named, ``prefix``* in
    filter/nat/mangle (the kubelet's KUBE-KUBELET-CANARY / KUBE-IPTABLES-HINT / KUBE-FIREWALL chains survive
    ``kube-proxy --cleanup``, for IPv6 too). A family whose tool is not installed is left alone."""
    for tool in (t for t in ("iptables", "ip6tables") if shutil.which(t)):
        for table in ("filter", "nat", "mangle"):
            rules = _run([tool, "-t", table, "-S"]).stdout.splitlines()
            for rule in rules:
                if rule.startswith("-A ") and not rule.split()[1].startswith(prefix) and f"-j {prefix}" in rule:
                    subprocess.run(  # through sh: -S quotes comments the way a shell reads them
                        ["sh", "-c", f"{tool} -t {table} " + rule.replace("-A ", "-D ", 1)],
                        capture_output=True,
                        text=True,
                        timeout=30,
                    )
            chains = [r.split()[1] for r in rules if r.startswith("-N ") and r.split()[1].startswith(prefix)]
            for chain in chains:
                _run([tool, "-t", table, "-F", chain])
            for chain in chains:
                _run([tool, "-t", table, "-X", chain])


def api_service_chain(cluster: str) -> str:
    """The nat chain that maps cluster ``cluster``'s ``kubernetes`` Service IP to its API server."""
    return f"DRA-API-{cluster}"  # <= 24 chars (names are <= 16); iptables allows 28


SHIM_SOCKET_DIR = Path("/run/containerd/s")  # containerd 2 puts every shim's socket here (not configurable)


def remove_dead_shim_sockets() -> list[str]:
    """Delete socket files in /run/containerd/s that no process listens on any more (shims killed by
    tear-down leave them); sockets of live shims (any containerd) are kept. Returns what was removed."""
    if not SHIM_SOCKET_DIR.is_dir():
        return []
    live = bound_unix_paths()
    removed = []
    for f in SHIM_SOCKET_DIR.iterdir():
        if f.is_socket() and str(f) not in live:
            f.unlink(missing_ok=True)
            removed.append(str(f))
    return removed


def bound_unix_paths() -> set[str]:
    """Paths of the bound unix sockets of every network namespace on the host (``/proc/<pid>/net/unix`` of one
    process per namespace: ``/proc/net/unix`` lists only the reader's, and a local node's shims run in the
    node's namespace, netns.py)."""
    seen: set[str] = set()
    live: set[str] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ns = os.readlink(entry / "ns" / "net")
            if ns in seen:
                continue
            text = (entry / "net" / "unix").read_text()
        except OSError:
            continue
        seen.add(ns)
        live |= {line.split()[-1] for line in text.splitlines()[1:] if len(line.split()) >= 8}
    return live


def rmdir_each(paths: list[str]) -> list[str]:
    """``rmdir`` every path (empty directories a cluster created on the host), deepest first; a missing one is
    fine. Returns those that could not be removed (not empty, busy), for the caller to keep recorded."""
    left = []
    for d in sorted(paths, key=len, reverse=True):
        try:
            Path(d).rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            left.append(d)
    return left
