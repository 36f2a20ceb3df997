"""kind nodes that pull through the lab's loopback registry (issue 25 §1): nothing imported by the harness.

A kind node is a container in its own network namespace, so the host's ``127.0.0.1:PORT`` registry
(conformance_lab.registry.server) is not its loopback. Three parts, all undone by :func:`stop`:

- ``hosts.toml`` mirrors (conformance_lab.local.node_config.write_hosts: docker.io, registry.k8s.io,
  dra-conformance.local and the registry itself, each served only by ``http://127.0.0.1:PORT``) in a host
  directory :func:`mirror_dir` mounted read-only at ``/etc/containerd/certs.d`` of every node (kind
  ``extraMounts``), and the containerd patch naming that ``config_path`` (kind's "local registry" guide;
  containerd docs/hosts.md; a version-2 CRI config key, migrated by containerd 2 to ``io.containerd.cri.v1.images``);
- a forwarder (conformance_lab.local.netfwd, the local cluster's) from each node container's ``127.0.0.1:PORT``
  to the host's, started once the node containers run, its record kept in :func:`mirror_dir`;
- the node's own images are what its image store held from the node image (``kind-preload-images.service``):
  the provider loads nothing (``kind load`` is skipped), so every other image on a node came from a pull.

A node container restarted by hand gets a new network namespace the forwarder does not listen in: not covered.
The user's switch is ``dra-conformance run --cluster kind --image-registry 127.0.0.1:PORT`` (the provider takes the
mirror from ``RunConfig.image_registry``); :func:`check_registry` refuses it before ``kind create`` when the
registry does not answer or lacks the suite's images.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from conformance.core import errors
from conformance_lab.local import netns
from conformance_lab.local.node_config import write_hosts
from conformance_lab.local.processes import HostProcess

MIRRORS = Path("/var/lib/dra-conformance/kind/mirrors")  # one directory per kind cluster pulling through a mirror
CERTS_D = "/etc/containerd/certs.d"
PATCH = f'[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "{CERTS_D}"\n'
FORWARDER = "kind-netfwd"


def mirror_dir(name: str) -> Path:
    """Where kind cluster ``name``'s ``certs.d`` tree and forwarder record live while it runs."""
    return MIRRORS / name


def check(mirror: str) -> str:
    """``mirror`` when it is a loopback ``127.x.y.z:PORT``; raises ConfigError naming it and the fix."""
    if not re.fullmatch(r"127\.\d+\.\d+\.\d+:\d{1,5}", mirror):
        raise errors.ConfigError(
            f"registry mirror {mirror!r} is not a loopback 127.x.y.z:PORT",
            source="kind registry mirror",
            fix="start the lab registry (conformance_lab.registry.server.running_registry) and pass its .host",
        )
    return mirror


PING_TIMEOUT_S = 5.0


def check_registry(mirror: str, refs: list[str], source: str = "--image-registry") -> str:
    """Before any kind node exists: ``mirror`` must be a loopback ``127.x.y.z:PORT`` (:func:`check`), answer the
    OCI distribution API root (``GET /v2/``: 200, or 401 from a registry with auth) within
    :data:`PING_TIMEOUT_S`, and serve a manifest for each image ``refs`` names under its own path
    (conformance.images.in_registry, as ``dra-conformance images push --registry`` writes it). Returns
    ``mirror``; raises ConfigError (``source``: the option) naming the URL that failed and the fix."""
    from conformance.images import ImageError, in_registry  # noqa: PLC0415
    from conformance_lab.registry.push import manifest_digest  # noqa: PLC0415 - HTTP client only with a mirror

    check(mirror)
    url = f"http://{mirror}/v2/"
    try:
        urllib.request.urlopen(url, timeout=PING_TIMEOUT_S).close()
    except urllib.error.HTTPError as exc:
        if exc.code != 401:
            raise errors.ConfigError(
                f"{url} answered HTTP {exc.code}, not an OCI registry's API root",
                source=source,
                fix="name the port of an OCI (distribution) registry",
            ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise errors.ConfigError(
            f"registry {mirror} is not reachable ({url}: {getattr(exc, 'reason', exc)})",
            source=source,
            fix="start it first (e.g. the lab's distribution registry) and check the port, or drop --image-registry",
        ) from None
    for ref in refs:
        try:
            manifest_digest(in_registry(ref, mirror))
        except ImageError as exc:
            raise errors.ConfigError(
                f"registry {mirror} cannot serve {ref}, which the kind nodes will pull: {exc}",
                source=source,
                fix=f"`dra-conformance images push --registry {mirror}` first",
            ) from None
    return mirror


def configure(config: dict, name: str, mirror: str) -> Path:
    """Add the mirror to kind ``config`` (the Cluster dict of provider.kind_config): the containerd
    ``config_path`` patch, and on every node the ``certs.d`` tree written under :func:`mirror_dir` mounted
    read-only. Returns that tree. Raises ConfigError for a mirror that is not a loopback HOST:PORT."""
    certs = write_hosts(mirror_dir(name) / "certs.d", check(mirror))
    config["containerdConfigPatches"] = [*config.get("containerdConfigPatches", []), PATCH]
    for node in config["nodes"]:
        mounts = node.setdefault("extraMounts", [])
        mounts.append({"hostPath": str(certs), "containerPath": CERTS_D, "readOnly": True})
    return certs


def node_pid(cli: str, env: dict[str, str] | None, node: str) -> int:
    """The host pid of kind node container ``node`` (``<cli> inspect``); raises ClusterUnavailable."""
    argv = [cli, "inspect", "--format", "{{.State.Pid}}", node]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    if proc.returncode != 0 or not proc.stdout.strip().isdigit() or int(proc.stdout) <= 0:
        raise errors.ClusterUnavailable(f"no pid for kind node {node}: {(proc.stderr or proc.stdout).strip()}")
    return int(proc.stdout)


def start_forwarder(name: str, mirror: str, node_pids: list[int], log: Path) -> HostProcess:
    """Forward each node's ``127.0.0.1:PORT`` (namespace of ``node_pids``) to the host's ``mirror``; the
    process is recorded in :func:`mirror_dir` for :func:`stop`. Raises ClusterUnavailable with its log."""
    specs = [f"{netns.netns_file(pid)}@{mirror}={mirror}" for pid in node_pids]
    proc = HostProcess.spawn(FORWARDER, name, [sys.executable, "-m", "conformance_lab.local.netfwd", *specs], log)
    mirror_dir(name).mkdir(parents=True, exist_ok=True)
    (mirror_dir(name) / "netfwd.json").write_text(json.dumps(proc.to_dict()))
    try:
        netns.wait_forwarder(proc)
    except RuntimeError as exc:
        raise errors.ClusterUnavailable(f"kind registry mirror: {exc}") from None
    return proc


def forwarder(name: str) -> HostProcess | None:
    """The forwarder :func:`start_forwarder` recorded for cluster ``name`` (running or not), None without one."""
    try:
        return HostProcess.from_dict(json.loads((mirror_dir(name) / "netfwd.json").read_text()))
    except (OSError, ValueError, KeyError):
        return None


def stop(name: str) -> list[str]:
    """Stop cluster ``name``'s forwarder and remove its :func:`mirror_dir` (and MIRRORS once empty); returns
    what was undone, one line each (nothing when the cluster had no mirror)."""
    here, done = mirror_dir(name), []
    proc = forwarder(name)
    if proc is not None and proc.is_running():
        proc.stop()
        done.append(f"process {FORWARDER} {proc.pid}")
    if here.exists():
        shutil.rmtree(here, ignore_errors=True)
        done.append(f"dir {here}")
    if MIRRORS.is_dir() and not any(MIRRORS.iterdir()):
        MIRRORS.rmdir()
    return done


def node_images(cli: str, env: dict[str, str] | None, node: str) -> set[str]:
    """The image references in kind node ``node``'s CRI image store (``ctr -n k8s.io images ls -q`` in the node
    container); raises ClusterUnavailable when the command fails."""
    argv = [cli, "exec", node, "ctr", "-n", "k8s.io", "images", "ls", "-q"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode != 0:
        raise errors.ClusterUnavailable(f"listing the images of kind node {node}: {proc.stderr.strip()}")
    return {line for line in proc.stdout.split() if not line.startswith("sha256:")}
