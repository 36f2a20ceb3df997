"""The host side of ``--cluster kind`` without Docker: a private containerd for kind's nerdctl provider, and
the host clean-up after it.

Docker's ``--privileged`` fails on hosts without CAP_SYS_RESOURCE in the bounding set; containerd 2 + nerdctl
run privileged containers there (shared/reference/kind-offline.md, Q1/Q2). :class:`KindRuntime` starts our
containerd (``[go.containerd]``, own root, state dir and socket; CRI and NRI off) and writes the nerdctl
config (own namespace, data root and CNI conf dir; Debian's CNI plugins). :class:`HostSnapshot` records what
kind/nerdctl touch before a cluster is created, and :meth:`HostSnapshot.restore` undoes what they left:
nerdctl leaves its bridge (``nerdctl0``), IPv6 NAT rules and empty ``CNI-*`` chains, a created
``/lib/modules`` bind source, host-local IPAM dirs and empty cgroups (kind-offline.md "Cleanup").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from conformance.core import errors
from conformance_lab.local.processes import HostProcess, alive
from conformance_lab.toolchain import cache, firstuse

NAMESPACE = "dra-kind"
LIB = Path("/var/lib/dra-conformance/kind")  # containerd content (keeps the loaded node image), nerdctl data
RUN = Path("/run/dra-conformance-kind")
SOCKET = RUN / "containerd.sock"
BASELINE = LIB / "host-before.json"  # the host as it was before our containerd started (HostSnapshot)
SHARED_CHAINS = (
    "CNI-FORWARD",
    "CNI-ADMIN",
    "CNI-ISOLATION-STAGE-1",
    "CNI-ISOLATION-STAGE-2",
    "CNI-HOSTPORT-DNAT",
    "CNI-HOSTPORT-MASQ",
    "CNI-HOSTPORT-SETMARK",
)
SYSCTLS = (
    "net.ipv4.ip_forward",
    "net.ipv6.conf.all.forwarding",
    "net.ipv6.conf.default.forwarding",
    "fs.protected_fifos",
    "fs.protected_hardlinks",
    "fs.protected_regular",
    "fs.protected_symlinks",
    "kernel.pid_max",
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
)
CNI_NETWORKS = Path("/var/lib/cni/networks")
# restored by restore(): what nerdctl's IPv6 network and a node's systemd-sysctl change; net.ipv4.ip_forward and
# the bridge-nf keys are recorded only (a local cluster running beside this one sets them too)
RESTORED_SYSCTLS = tuple(k for k in SYSCTLS if k != "net.ipv4.ip_forward" and "bridge-nf" not in k)
HOST_PATHS = (
    Path("/lib/modules"),
    Path("/var/lib/cni/networks/kind"),
    Path("/var/lib/cni/networks/bridge"),
    Path("/run/nerdctl"),
    Path("/etc/cni/net.d/nerdctl-kind.conflist"),
)


def _run(argv: list[str], env: dict | None = None, timeout: float = 120, check: bool = True) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise errors.ClusterUnavailable(
            f"`{' '.join(argv[:4])}` failed: {(proc.stderr or proc.stdout).strip()[-1500:]}"
        )
    return proc.stdout


class KindRuntime:
    """Our containerd + the environment under which ``kind`` and ``nerdctl`` use it."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.pidfile = RUN / "containerd.pid"

    def binaries(self) -> dict[str, Path]:
        """containerd (+shim, ctr), nerdctl and kind from the cache; raises ClusterUnavailable naming the build."""
        from conformance_lab.toolchain.kindtools import nerdctl  # noqa: PLC0415

        try:
            out = {"containerd": cache.tool_binary("containerd"), "kind": firstuse.tool_binary("kind")}
            out["nerdctl"] = nerdctl(self.log_dir / "nerdctl-build.log")
        except (cache.CacheMiss, RuntimeError) as exc:
            raise errors.ClusterUnavailable(f"{exc} (or run `make kind-node-image`)") from exc
        return out

    def env(self) -> dict[str, str]:
        """The process environment for kind and nerdctl (PATH with nerdctl and containerd first)."""
        b = self.binaries()
        path = f"{b['nerdctl'].parent}:{b['containerd'].parent}:{b['kind'].parent}:{os.environ.get('PATH', '')}"
        return dict(
            os.environ,
            PATH=path,
            NERDCTL_TOML=str(RUN / "nerdctl.toml"),
            CONTAINERD_ADDRESS=str(SOCKET),
            CONTAINERD_NAMESPACE=NAMESPACE,
            KIND_EXPERIMENTAL_PROVIDER="nerdctl",
        )

    def nerdctl(self, *args: str, timeout: float = 300, check: bool = True) -> str:
        """Run ``nerdctl args`` against our containerd; stdout. Raises ClusterUnavailable when it fails."""
        env = self.env()
        return _run([str(self.binaries()["nerdctl"]), *args], env=env, timeout=timeout, check=check)

    def running(self) -> HostProcess | None:
        """The containerd we started earlier when it still runs (pid file + start time), else None."""
        try:
            pid, started = (int(x) for x in self.pidfile.read_text().split())
        except (OSError, ValueError):
            return None
        return (
            HostProcess("containerd", "kind", pid, started, self.log_dir / "containerd.log", [])
            if alive(pid, started)
            else None
        )

    def start(self) -> None:
        """Start containerd unless ours runs; wait until ``nerdctl version`` answers (30 s)."""
        if self.running():
            return
        b = self.binaries()
        LIB.mkdir(parents=True, exist_ok=True)
        if not BASELINE.exists():  # a baseline left by a crashed run stays: it predates that run
            BASELINE.write_text(json.dumps(HostSnapshot().to_dict()))
        for d in (LIB / "containerd", LIB / "nerdctl", LIB / "cni", LIB / "opt", RUN):
            d.mkdir(parents=True, exist_ok=True)
        config = RUN / "containerd.toml"
        config.write_text(
            f"""version = 3
root = '{LIB / "containerd"}'
state = '{RUN / "containerd"}'
disabled_plugins = ['io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.images', 'io.containerd.cri.v1.runtime',
                    'io.containerd.nri.v1.nri']
[grpc]
  address = '{SOCKET}'
[ttrpc]
  address = '{SOCKET}.ttrpc'
[plugins.'io.containerd.internal.v1.opt']
  path = '{LIB / "opt"}'
"""
        )
        (RUN / "nerdctl.toml").write_text(
            f'address = "unix://{SOCKET}"\nnamespace = "{NAMESPACE}"\ndata_root = "{LIB / "nerdctl"}"\n'
            f'cni_path = "/usr/lib/cni"\ncni_netconfpath = "{LIB / "cni"}"\n'
        )
        env = {"PATH": f"{b['containerd'].parent}:{os.environ.get('PATH', '')}"}
        proc = HostProcess.spawn(
            "containerd",
            "kind",
            [str(b["containerd"]), "--config", str(config)],
            self.log_dir / "kind-containerd.log",
            env=env,
        )
        self.pidfile.write_text(f"{proc.pid} {proc.started}")
        deadline = time.monotonic() + 30
        version = [str(b["nerdctl"]), "version"]
        while time.monotonic() < deadline and proc.is_running():
            if SOCKET.exists() and subprocess.run(version, capture_output=True, env=self.env()).returncode == 0:
                return
            time.sleep(0.5)
        raise errors.ClusterUnavailable(f"kind's containerd did not start: {proc.tail()}")

    def stop(self) -> list[str]:
        """When no container of ours is left: remove nerdctl's ``kind`` network, stop our containerd, and undo
        what changed on the host since it started (:data:`BASELINE`); returns what was undone."""
        proc = self.running()
        if proc is not None:
            if self.nerdctl("ps", "-aq", check=False).strip():
                return []
            self.nerdctl("network", "rm", "kind", check=False)
            proc.stop(timeout=20)
        shutil.rmtree(RUN, ignore_errors=True)
        shutil.rmtree(Path("/run/containerd/runc") / NAMESPACE, ignore_errors=True)
        try:
            baseline = HostSnapshot(json.loads(BASELINE.read_text()))
        except (OSError, ValueError, KeyError):
            return []
        done = baseline.restore()
        BASELINE.unlink()
        return done

    def load(self, archive: Path, ref: str) -> None:
        """``nerdctl load`` the node image unless ``ref`` is present already."""
        if self.nerdctl("image", "inspect", ref, check=False).strip():
            return
        self.nerdctl("load", "-i", str(archive), timeout=900)


def _save(cmd: str) -> dict[str, list[str]]:
    """``{table: rules}`` of ``iptables-save``/``ip6tables-save`` (chains as ``:NAME`` lines)."""
    out, table = {}, ""
    for line in _run([cmd], check=False).splitlines():
        if line.startswith("*"):
            table = line[1:]
            out[table] = []
        elif line.startswith((":", "-A")) and table:
            out[table].append(line.split(" [", 1)[0] if line.startswith(":") else line)
    return out


class HostSnapshot:
    """What a kind cluster may change on the host, recorded before ``kind create`` (see module docstring)."""

    def __init__(self, data: dict | None = None) -> None:
        if data is not None:  # from :meth:`to_dict`
            self.links, self.paths, self.sysctls = set(data["links"]), {Path(p) for p in data["paths"]}, data["sysctls"]
            self.chains = {cmd: {t: set(c) for t, c in tables.items()} for cmd, tables in data["chains"].items()}
            return
        self.links = set(os.listdir("/sys/class/net"))
        self.paths = {p for p in (*HOST_PATHS, CNI_NETWORKS) if p.exists() or p.is_symlink()}
        self.sysctls = sysctls()
        self.chains = {
            cmd: {t: {r.split()[0][1:] for r in rules if r.startswith(":")} for t, rules in _save(cmd).items()}
            for cmd in ("iptables-save", "ip6tables-save")
        }

    def to_dict(self) -> dict:
        """JSON-able form (kept in :data:`BASELINE` while our containerd runs)."""
        chains = {cmd: {t: sorted(c) for t, c in tables.items()} for cmd, tables in self.chains.items()}
        return {
            "links": sorted(self.links),
            "paths": sorted(map(str, self.paths)),
            "sysctls": self.sysctls,
            "chains": chains,
        }

    def restore(self) -> list[str]:
        """Undo what kind/nerdctl left since the snapshot; returns what was removed (one line each)."""
        done = []
        for link in sorted(set(os.listdir("/sys/class/net")) - self.links):
            if link == "nerdctl0" or link.startswith("br-"):
                _run(["ip", "link", "del", link], check=False)
                done.append(f"link {link}")
        for cmd in ("iptables-save", "ip6tables-save"):
            done += _clean_chains(cmd, self.chains[cmd])
        for path in sorted(set(HOST_PATHS) - self.paths):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
                done.append(f"dir {path}")
            elif path.exists():
                path.unlink()
                done.append(f"file {path}")
        if CNI_NETWORKS not in self.paths and CNI_NETWORKS.is_dir() and not any(CNI_NETWORKS.iterdir()):
            CNI_NETWORKS.rmdir()  # created for nerdctl's IPAM; shared with other runtimes once it has entries
            done.append(f"dir {CNI_NETWORKS}")
        for cgroup in Path("/sys/fs/cgroup").glob(f"*/{NAMESPACE}"):
            for d in sorted(cgroup.rglob("*"), key=lambda p: -len(p.parts)):
                if d.is_dir():
                    d.rmdir()
            cgroup.rmdir()
            done.append(f"cgroup {cgroup}")
        for key, before in self.sysctls.items():
            if key not in RESTORED_SYSCTLS:
                continue
            now = sysctls((key,)).get(key)
            if now is not None and now != before:
                _run(["sysctl", "-w", f"{key}={before}"], check=False)
                done.append(f"sysctl {key} {now} -> {before}")
        return done


def sysctls(keys: tuple[str, ...] = SYSCTLS) -> dict[str, str]:
    """Current values of the host sysctls kind may touch (missing keys left out)."""
    out = {}
    for key in keys:
        path = Path("/proc/sys") / key.replace(".", "/")
        try:
            out[key] = " ".join(path.read_text().split())
        except OSError:
            pass
    return out


PER_CONTAINER = re.compile(r"CNI-[0-9a-f]{24}")  # the CNI plugins' per-container chain names


def _clean_chains(cmd: str, before: dict[str, set[str]]) -> list[str]:
    """Delete rules of our namespace's containers and the chains nerdctl's CNI plugins created since the
    snapshot (rules jumping to them first). Other clusters' chains (e.g. a concurrent local cluster's) are
    kept: a new per-container chain is ours when a rule carrying our namespace jumps to it, or when it is empty
    and unreferenced (CNI DEL removed its rules and jump but not the chain)."""
    binary = cmd.replace("-save", "")
    done = []
    for table, rules in _save(cmd).items():
        ours = {c for c in SHARED_CHAINS if c not in before.get(table, set())}
        for rule in rules:
            if rule.startswith("-A") and f"{NAMESPACE}-" in rule:
                m = re.search(r" -j (CNI-[\w-]+)", rule)
                if m and m.group(1) not in before.get(table, set()):
                    ours.add(m.group(1))
        # a per-container chain whose jump and rules CNI DEL already removed stays behind empty: new since the
        # snapshot, empty and unreferenced, it is nobody's (a live container's chain has rules and a jump)
        used = {w for r in rules if r.startswith("-A") for w in (r.split()[1], *re.findall(r" -j (\S+)", r))}
        ours |= {
            c
            for r in rules
            if r.startswith(":") and PER_CONTAINER.fullmatch(c := r.split()[0][1:])
            if c not in before.get(table, set()) and c not in used
        }
        for rule in rules:
            target = re.search(r" -j ([\w-]+)", rule)
            if rule.startswith("-A") and (f"{NAMESPACE}-" in rule or (target and target.group(1) in ours)):
                chain = rule.split()[1]
                if chain not in ours:
                    _run([binary, "-t", table, "-D", *_split(rule[3:])], check=False)
                    done.append(f"{binary} -t {table} rule in {chain}")
        for chain in sorted(ours):
            if any(r.startswith(f":{chain}") for r in rules):
                _run([binary, "-t", table, "-F", chain], check=False)
        for chain in sorted(ours):
            if any(r.startswith(f":{chain}") for r in rules):
                _run([binary, "-t", table, "-X", chain], check=False)
                done.append(f"{binary} -t {table} chain {chain}")
    return done


def _split(rule: str) -> list[str]:
    import shlex  # noqa: PLC0415

    return shlex.split(rule)
