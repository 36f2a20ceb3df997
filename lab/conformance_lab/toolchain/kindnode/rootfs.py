"""The kind node image's base: a Debian root filesystem prepared the way kind's ``images/base/Dockerfile`` does.

Steps (facts from kind ``images/base/Dockerfile`` at the pinned ``[go.kind]`` version, read from the Go module
cache, never copied into this repository; shared/reference/kind-offline.md "Preparation" step 3):

1. ``mmdebstrap --variant=minbase`` of ``[kind] debian-suite`` with ``[kind] node-packages`` (root mode).
2. kind's ``images/base/files``: ``/usr/local/bin`` (entrypoint, clean-install), ``/kind`` (+``bin`` 0755),
   ``/etc/{crictl.yaml,containerd,default,sysctl.d,systemd/system}``; the Dockerfile's ``rm`` of ``*.wants``,
   ``ReadKMsg=no``, ``/sbin/init`` link; kubelet, containerd and undo-mount-hacks enabled, systemd-binfmt masked.
3. containerd, containerd-shim-runc-v2 and ctr of ``[go.containerd]`` in ``/usr/local/bin``; Debian's runc;
   Debian's CNI plugins (host-local, loopback, ptp, portmap, bridge) in ``/opt/cni/bin``;
   ``/etc/containerd/cri-base.json`` = ``ctr oci spec`` + the ``mount-product-files.sh`` createContainer hook,
   rlimits removed.
4. Host-safety changes (ours): ``restrict_oom_score_adj = true`` (hosts without CAP_SYS_RESOURCE); every
   sysctl.d file except kind's own (network, namespaced) removed, because systemd-sysctl in a privileged node
   container writes non-namespaced keys such as ``fs.protected_*`` on the host; the entrypoint hides cgroup v1
   controllers the host has not mounted (see :data:`CGROUP_PATCH`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from ..steps import SetupError

KIND_FILES = Path("images/base/files")
CNI_PLUGINS = ("host-local", "loopback", "ptp", "portmap", "bridge")
SERVICES = ("kubelet.service", "containerd.service", "undo-mount-hacks.service")

# Inserted into kind's entrypoint right after `fix_cgroup`. On a cgroup v1 host that mounts only some of the
# controllers listed in /proc/cgroups (e.g. no hugetlb), systemd in the node mounts all of them, the extra
# ones at the hierarchy root, and kubelet then fails: 'cgroup ["kubelet"] has some missing paths:
# /sys/fs/cgroup/hugetlb/kubelet.slice' (kind-offline.md "Q3 attempt 1"). Showing systemd a /proc/cgroups
# with only the mounted controllers is the trick kind itself uses for `misc` (remove_misc_controller);
# kind's undo-mount-hacks.service unmounts it after boot.
CGROUP_PATCH = r"""
# dra-conformance: hide cgroup v1 controllers that are not mounted in this container from systemd
hide_unmounted_cgroup_controllers() {
  if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    return
  fi
  local mounted hidden
  mounted=$(findmnt -lun -o options -t cgroup | tr ',' '\n' | sort -u | tr '\n' ' ')
  awk -v m="${mounted}" 'BEGIN { n = split(m, a, " "); for (i = 1; i <= n; i++) ok[a[i]] = 1 }
    NR == 1 || ($1 in ok)' /proc/cgroups >/kind/mounted-cgroups
  hidden=$(awk -v m="${mounted}" 'BEGIN { n = split(m, a, " "); for (i = 1; i <= n; i++) ok[a[i]] = 1 }
    NR > 1 && !($1 in ok) { printf "%s ", $1 }' /proc/cgroups)
  if [[ -z "${hidden}" ]]; then
    return
  fi
  log_info "hiding unmounted cgroup v1 controllers from systemd: ${hidden}"
  if findmnt /proc/cgroups >/dev/null; then
    umount /proc/cgroups || true
  fi
  mount --bind /kind/mounted-cgroups /proc/cgroups
}
hide_unmounted_cgroup_controllers
"""


def _run(cmd: list[str], what: str, log: Path, **kw) -> str:
    with log.open("a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=fh, text=True, **kw)
    if proc.returncode != 0:
        raise SetupError(what, f"`{' '.join(cmd[:4])} ...` exited {proc.returncode}", f"read {log}")
    return proc.stdout


def debootstrap(root: Path, suite: str, packages: list[str], mirrors: list[str], log: Path) -> None:
    """``mmdebstrap`` a minbase ``suite`` with ``packages`` into ``root`` (must not exist). Raises SetupError
    naming the fix when mmdebstrap is missing or the archive is unreachable."""
    if shutil.which("mmdebstrap") is None:
        raise SetupError("node rootfs", "mmdebstrap is not installed", "run `apt-get install -y mmdebstrap`")
    cmd = ["mmdebstrap", "--mode=root", "--variant=minbase", "--include=" + ",".join(packages)]
    cmd += [f"--dpkgopt=path-exclude=/usr/share/{d}/*" for d in ("man", "doc", "locale")]
    _run([*cmd, suite, str(root), *mirrors], "node rootfs (mmdebstrap; is the Debian archive reachable?)", log)


def _copy_tree(src: Path, dst: Path, mode: int) -> None:
    for path in sorted(src.rglob("*")):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            target.chmod(mode)


def apply_kind_base(root: Path, kind_module: Path, containerd_bin: Path, log: Path) -> None:
    """Apply kind's base-image steps (module dir ``kind_module``) and our host-safety changes to ``root``."""
    files = kind_module / KIND_FILES
    if not files.is_dir():
        raise SetupError("node rootfs", f"{files} is missing", "run `make setup` (it downloads the kind module)")
    _copy_tree(files / "usr/local/bin", root / "usr/local/bin", 0o755)
    _copy_tree(files / "kind", root / "kind", 0o644)
    _copy_tree(files / "kind/bin", root / "kind/bin", 0o755)
    for d in ("kind", "kind/bin"):
        (root / d).chmod(0o755)
    _copy_tree(files / "etc", root / "etc", 0o644)
    for wants in (
        "lib/systemd/system/multi-user.target.wants",
        "etc/systemd/system",
        "lib/systemd/system/local-fs.target.wants",
        "lib/systemd/system/basic.target.wants",
    ):
        for link in (root / wants).glob("*.wants/*" if wants == "etc/systemd/system" else "*"):
            link.unlink()
    for pattern in ("*udev*", "*initctl*"):
        for link in (root / "lib/systemd/system/sockets.target.wants").glob(pattern):
            link.unlink()
    for unit in (root / "lib/systemd/system/sysinit.target.wants").glob("systemd-tmpfiles-setup.service"):
        unit.unlink()
    with (root / "etc/systemd/journald.conf").open("a") as fh:
        fh.write("ReadKMsg=no\n")
    init = root / "sbin/init"
    if init.is_symlink() or init.exists():
        init.unlink()
    os.symlink("/usr/lib/systemd/systemd", init)
    _run(["chroot", str(root), "systemctl", "enable", *SERVICES], "node rootfs: systemctl enable", log)
    _run(["chroot", str(root), "systemctl", "mask", "systemd-binfmt.service"], "node rootfs: mask binfmt", log)
    (root / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
    for name in ("containerd", "containerd-shim-runc-v2", "ctr"):
        shutil.copyfile(containerd_bin / name, root / "usr/local/bin" / name)
        (root / "usr/local/bin" / name).chmod(0o755)
    (root / "opt/cni/bin").mkdir(parents=True, exist_ok=True)
    for plugin in CNI_PLUGINS:
        shutil.copyfile(root / "usr/lib/cni" / plugin, root / "opt/cni/bin" / plugin)
        (root / "opt/cni/bin" / plugin).chmod(0o755)
    spec = json.loads(
        _run(["chroot", str(root), "/usr/local/bin/ctr", "oci", "spec"], "node rootfs: ctr oci spec", log)
    )
    spec.setdefault("hooks", {}).setdefault("createContainer", []).append({"path": "/kind/bin/mount-product-files.sh"})
    spec["process"].pop("rlimits", None)
    (root / "etc/containerd/cri-base.json").write_text(json.dumps(spec, indent=2) + "\n")
    _harden(root)


def _harden(root: Path) -> None:
    """Our changes for hosts like the development machine (module docstring, step 4)."""
    config = root / "etc/containerd/config.toml"
    text = config.read_text()
    if "restrict_oom_score_adj = false" not in text:
        raise SetupError(
            "node rootfs", f"{config} has no `restrict_oom_score_adj = false`", "update kindnode/rootfs.py"
        )
    config.write_text(text.replace("restrict_oom_score_adj = false", "restrict_oom_score_adj = true"))
    kind_sysctl = {p.name for p in (root / "etc/sysctl.d").glob("10-network-*.conf")}
    for d in ("usr/lib/sysctl.d", "lib/sysctl.d", "etc/sysctl.d"):
        for conf in (root / d).glob("*.conf"):
            if not (d == "etc/sysctl.d" and conf.name in kind_sysctl):
                conf.unlink()
    entrypoint = root / "usr/local/bin/entrypoint"
    text = entrypoint.read_text()
    if "\nfix_cgroup\n" not in text:
        raise SetupError("node rootfs", "kind's entrypoint no longer calls fix_cgroup", "update CGROUP_PATCH")
    entrypoint.write_text(text.replace("\nfix_cgroup\n", "\nfix_cgroup\n" + CGROUP_PATCH, 1))
