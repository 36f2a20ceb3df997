"""`dra-conformance kind build-node-image`: a kind node image for one Kubernetes tag, built offline.

Output: ``<cache>/images/kind-node-<tag>-<key>.oci.tar`` holding two layers, the prepared Debian base
(:mod:`.rootfs`, cached as a reusable layer) and a node layer:

- ``/usr/bin/{kubeadm,kubelet,kubectl}``, ``/usr/local/bin/crictl``, ``/kind/version`` (the tag);
- ``/kind/images/*.tar``: OCI archives of the control-plane images `kubeadm config images list` names
  (kube-apiserver, -controller-manager, -scheduler, kube-proxy, etcd, coredns, pause) plus containerd's
  ``sandbox_image``, built from the cached binaries, imported at boot by ``kind-preload-images.service``
  (before kubelet) with ``ctr -n k8s.io images import``;
- ``/kind/manifests/default-cni.yaml`` (:mod:`.cni`) and ``default-storage.yaml``.

Image config as kind's base image: ``Env container=docker``, ``Entrypoint [/usr/local/bin/entrypoint,
/sbin/init]``, ``StopSignal SIGRTMIN+3``. The key covers every input (the base layer's digest, the binaries'
manifests, the tag, this package's source), so a warm build is one lookup. Raises SetupError / ImageError.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

from .. import cache, kindtools, system
from ..images import base as image_base
from ..images import store
from ..images.oci import DEFAULT_PATH, ImageConfig, entries_layer, tree_layer, write_image, write_oci_archive
from ..steps import SetupError
from ..versions import load
from . import cni, rootfs

NODE_REF = "dra-conformance.local/kind-node"
PRELOAD_UNIT = """[Unit]
Description=Import the node image's preloaded images into containerd (dra-conformance)
After=containerd.service
Requires=containerd.service
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for f in /kind/images/*.tar; do ctr -n k8s.io images import --local "$f" || exit 1; done'

[Install]
WantedBy=multi-user.target
"""


def _source_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()


def _stamp(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path), st.st_size, st.st_mtime_ns


def _manifest(entry: Path) -> dict:
    return json.loads((entry / cache.MANIFEST).read_text())


def kind_module() -> Path:
    """The ``sigs.k8s.io/kind`` module directory of the ``[go.kind]`` pin in the Go module cache."""
    version = load().go_tools["kind"].version
    out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip()
    path = Path(out) / f"sigs.k8s.io/kind@{version}"
    if not path.is_dir():
        raise SetupError("kind node image", f"{path} is missing", "run `make setup` (it builds kind from its module)")
    return path


def base_layer(log: Path) -> Path:
    """The prepared Debian base layer (cached by suite, packages, mirrors, kind module, containerd build)."""
    v = load()
    suite, packages, mirrors = v.kind["debian-suite"], v.kind["node-packages"], v.kind["debian-mirrors"]
    containerd = v.go_tools["containerd"]
    cbin = cache.tool_entry("containerd", containerd.version)
    key = store.cache_key(
        "kind-base",
        suite,
        packages,
        mirrors,
        v.go_tools["kind"].version,
        _manifest(cbin),
        (Path(__file__).parent / "rootfs.py").read_bytes(),
    )

    def build(tmp: Path) -> None:
        system.install_debian(("mmdebstrap",))
        work = store.work_dir("kind-base")
        try:
            root = work / "rootfs"
            rootfs.debootstrap(root, suite, packages, mirrors, log)
            rootfs.apply_kind_base(root, kind_module(), cbin / "bin", log)
            tree_layer(tmp, root, exclude=())
        finally:
            store.drop(work)

    return store.cached_layer("kind-base", key, build)


def image_refs(kubeadm: Path, tag: str) -> dict[str, str]:
    """Component name -> image ref from `kubeadm config images list --kubernetes-version tag`."""
    out = subprocess.run(
        [str(kubeadm), "config", "images", "list", "--kubernetes-version", tag], capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SetupError(
            "kind node image", f"kubeadm config images list failed: {out.stderr.strip()}", "rebuild kubeadm"
        )
    refs = {}
    for ref in out.stdout.split():
        name = ref.rsplit("/", 1)[-1].split(":", 1)[0]
        refs[name] = ref
    return refs


def _dirs(*paths: str) -> list:
    seen = []
    for p in paths:
        parts = p.split("/")
        seen += ["/".join(parts[: i + 1]) for i in range(len(parts)) if "/".join(parts[: i + 1]) not in seen]
    return [(d, "dir", None, 0o755) for d in dict.fromkeys(seen)]


def component_archives(dest: Path, tag: str, tools: dict[str, Path], base: Path) -> None:
    """Write one OCI archive per control-plane image into ``dest`` (kube-proxy on the Debian ``base`` layer:
    it needs iptables; it also runs :mod:`.cni`)."""
    k8s_bin = cache.k8s_entry(tag) / "bin"
    etcd_bin = cache.tool_entry("etcd", load().go_tools["etcd"].version) / "bin"
    refs = image_refs(tools["kubeadm"], tag)
    common = [*image_base.base_dirs(), *image_base.account_files()]
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        binary = ("usr/local/bin/" + name, "file", (k8s_bin / name).read_bytes(), 0o755)
        write_oci_archive(
            dest / f"{name}.tar", refs[name], [*common, *_dirs("usr/local/bin"), binary], [], env=(DEFAULT_PATH,)
        )
    etcd = [("usr/local/bin/" + b, "file", (etcd_bin / b).read_bytes(), 0o755) for b in ("etcd", "etcdctl")]
    write_oci_archive(
        dest / "etcd.tar",
        refs["etcd"],
        [*common, *_dirs("usr/local/bin", "var/lib/etcd"), *etcd],
        [],
        env=(DEFAULT_PATH,),
    )
    coredns = ("coredns", "file", tools["coredns"].read_bytes(), 0o755)
    write_oci_archive(dest / "coredns.tar", refs["coredns"], [*common, coredns], ["/coredns"])
    pause = ("pause", "file", image_base.build_pause().read_bytes(), 0o755)
    sandbox = re.search(
        r'sandbox_image = "([^"]+)"', (kind_module() / rootfs.KIND_FILES / "etc/containerd/config.toml").read_text()
    )
    for i, ref in enumerate(dict.fromkeys([refs["pause"], *(sandbox.groups() if sandbox else ())])):
        write_oci_archive(dest / f"pause-{i}.tar", ref, [*common, pause], ["/pause"])
    proxy = dest / "kube-proxy.layer"
    tree_layer_entries = [
        *_dirs("usr/local/bin"),
        ("usr/local/bin/kube-proxy", "file", (k8s_bin / "kube-proxy").read_bytes(), 0o755),
    ]
    entries_layer(proxy, tree_layer_entries)
    write_image(dest / "kube-proxy.tar", refs["kube-proxy"], [base, proxy], ImageConfig(env=(DEFAULT_PATH,)))
    proxy.unlink()


def node_tree(root: Path, tag: str, tools: dict[str, Path], base: Path) -> None:
    """Fill ``root`` with the node layer (module docstring)."""
    k8s_bin = cache.k8s_entry(tag) / "bin"
    for name, src in (
        ("kubeadm", tools["kubeadm"]),
        ("kubelet", k8s_bin / "kubelet"),
        ("kubectl", k8s_bin / "kubectl"),
    ):
        (root / "usr/bin").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, root / "usr/bin" / name)
        (root / "usr/bin" / name).chmod(0o755)
    (root / "usr/local/bin").mkdir(parents=True)
    shutil.copyfile(tools["crictl"], root / "usr/local/bin/crictl")
    (root / "usr/local/bin/crictl").chmod(0o755)
    (root / "kind/images").mkdir(parents=True)
    (root / "kind/version").write_text(tag + "\n")
    component_archives(root / "kind/images", tag, tools, base)
    refs = image_refs(tools["kubeadm"], tag)
    (root / "kind/manifests").mkdir()
    (root / "kind/manifests/default-cni.yaml").write_text(cni.manifest(refs["kube-proxy"]))
    (root / "kind/manifests/default-storage.yaml").write_text(cni.STORAGE)
    units = root / "etc/systemd/system"
    (units / "multi-user.target.wants").mkdir(parents=True)
    (units / "kind-preload-images.service").write_text(PRELOAD_UNIT)
    (units / "multi-user.target.wants/kind-preload-images.service").symlink_to(
        "/etc/systemd/system/kind-preload-images.service"
    )
    for d in (
        root / "usr",
        root / "usr/bin",
        root / "usr/local",
        root / "usr/local/bin",
        root / "etc",
        root / "etc/systemd",
        units,
    ):
        d.chmod(0o755)


def node_image(k8s_version: str | None = None, log: Path | None = None) -> tuple[str, Path]:
    """Build (or find cached) the node image for ``k8s_version`` (minor or tag; default pinned);
    returns ``(ref, archive path)``. Raises SetupError / ImageError naming the step and the fix."""
    tag = load().k8s_tag(k8s_version)
    log = log or cache.root() / "logs" / f"kind-node-{time.strftime('%Y%m%d-%H%M%S')}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    tools = kindtools.all_tools(tag, log)
    tools.pop("nerdctl")
    base = base_layer(log)
    stamps = {name: _stamp(path) for name, path in tools.items()}
    entries = [_manifest(cache.k8s_entry(tag)), _manifest(cache.tool_entry("etcd", load().go_tools["etcd"].version))]
    key = store.cache_key("kind-node", tag, base.name, entries, stamps, _source_digest(), image_base.pause_key("pause"))
    ref = f"{NODE_REF}:{tag}-{key}"

    def build(tmp: Path) -> None:
        work = store.work_dir("kind-node")
        try:
            node_tree(work / "node", tag, tools, base)
            layer = work / "node.layer"
            tree_layer(layer, work / "node", exclude=())
            config = ImageConfig(
                entrypoint=("/usr/local/bin/entrypoint", "/sbin/init"),
                env=(DEFAULT_PATH, "container=docker"),
                stop_signal="SIGRTMIN+3",
            )
            write_image(tmp, ref, [base, layer], config)
        finally:
            store.drop(work)

    return ref, store.cached_archive(f"kind-node-{tag}", key, build)
