"""PREP-12's major:minor check (conformance/node/cdi_identity.py ``number_problems``): a device node the runtime
creates from the CDI spec's type/major/minor must have the numbers of its hostPath on the node, stat'ed through
node access (StatsNodeDevices: local and kind), compared with the ``ls -ld`` line the container printed."""

from __future__ import annotations

import os
import re
import subprocess
import types

import pytest
from conformance_lab.kind.node_access import KindNodeAccess
from conformance_lab.local.node_access import LocalNodeAccess

from conformance.core.handles import StatsNodeDevices
from conformance.node import cdi_identity


def _numbers(path: str) -> str:
    st = os.stat(path)
    return cdi_identity.device_number(st.st_mode, st.st_rdev)


def _sh(script: str) -> str:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout


def test_stat_on_the_node_and_ls_in_the_container_give_the_same_numbers(tmp_path):
    """The node side (``stat -L`` script, parsed) and the container side (the listing's ``ls -ld`` line) of
    /dev/null read alike; a plain file is no device node; a missing path is left out of the node side."""
    (tmp_path / "plain").touch()
    paths = ["/dev/null", "/dev/zero", str(tmp_path / "plain"), str(tmp_path / "missing")]
    assert cdi_identity.parse_stat(_sh(cdi_identity.stat_script(paths))) == {
        "/dev/null": _numbers("/dev/null"),
        "/dev/zero": _numbers("/dev/zero"),
        str(tmp_path / "plain"): "",
    }
    assert _numbers("/dev/null") == f"c {os.major(os.stat('/dev/null').st_rdev)}:3"
    listing = cdi_identity.PathListing("gpu-0", frozenset({"/dev/null", str(tmp_path / "plain")}), {})
    assert listing.numbers(_sh(listing.script)) == {"/dev/null": _numbers("/dev/null"), str(tmp_path / "plain"): ""}
    busybox = f"{cdi_identity.PATH_MARK} present /dev/x\ncrw-rw-rw-    1 root     root      10, 200 Dec  6 03:00 /dev/x"
    assert listing.numbers(busybox) == {"/dev/x": "c 10:200"}


class _Node:
    """Node access that stats on this host (as the local mode does)."""

    def device_numbers(self, node: str, paths: list[str]) -> dict[str, str]:
        return {p: _numbers(p) for p in paths if os.path.exists(p)}


def _found(*pairs: tuple[str, str]) -> dict[str, set]:
    return {"node_hosts": set(pairs)}


def _listed(path: str, numbers: str) -> str:
    major, minor = numbers.split()[1].split(":")
    return f"{cdi_identity.PATH_MARK} present {path}\ncrw-rw-rw- 1 root root {major}, {minor} Dec  6 03:00 {path}\n"


def test_a_node_created_from_another_devices_numbers_is_named():
    """gpu-3's /dev/dra-gpu-3 backed by /dev/urandom, created from /dev/null's numbers: the container shows
    another device under the right name and hostPath; the message names both numbers and the node."""
    listing = cdi_identity.PathListing("gpu-3", frozenset({"/dev/dra-gpu-3"}), {"/dev/dra-gpu-0": "gpu-0"})
    found = _found(("/dev/dra-gpu-3", "/dev/urandom"), ("/dev/other", "/dev/zero"))  # not rendered for gpu-3
    right = _listed("/dev/dra-gpu-3", _numbers("/dev/urandom"))
    wrong = _listed("/dev/dra-gpu-3", _numbers("/dev/null"))
    assert isinstance(_Node(), StatsNodeDevices)
    assert cdi_identity.number_problems(_Node(), "n1", found, listing, right) == []
    assert cdi_identity.number_problems(_Node(), "n1", found, listing, wrong) == [
        f"/dev/dra-gpu-3 in the container is {_numbers('/dev/null')}, its hostPath /dev/urandom on node n1 is "
        f"{_numbers('/dev/urandom')}"
    ]
    gone = _found(("/dev/dra-gpu-3", "/dev/no-such-node"))
    assert cdi_identity.number_problems(_Node(), "n1", gone, listing, right) == [
        "/dev/dra-gpu-3: its hostPath /dev/no-such-node does not exist on node n1"
    ]
    assert cdi_identity.number_problems(object(), "n1", found, listing, wrong) == []  # cannot stat: not compared


def test_local_and_kind_node_access_stat_device_nodes(monkeypatch):
    """Both lab node access modes are StatsNodeDevices: local stats host paths, kind runs the stat script in the
    node container (here: a local sh standing in for ``docker exec``)."""
    local = LocalNodeAccess(types.SimpleNamespace(nodes=[types.SimpleNamespace(name="n1")]))
    assert local.device_numbers("n1", ["/dev/null", "/no/such"]) == {"/dev/null": _numbers("/dev/null")}
    kind = KindNodeAccess(["n1"])
    monkeypatch.setattr(kind, "_exec", lambda node, *argv: _sh(argv[-1]))
    assert kind.device_numbers("n1", ["/dev/zero"]) == {"/dev/zero": _numbers("/dev/zero")}
    assert isinstance(local, StatsNodeDevices) and isinstance(kind, StatsNodeDevices)
    with pytest.raises(Exception, match="not a local node"):
        local.device_numbers("n2", ["/dev/null"])


def _in_helper(script: str) -> str:
    """Run a helper-side stat script locally, / standing for /host: the paths it prints get /host back."""
    out = _sh(script.replace("/host/", "/"))
    return "\n".join(re.sub(r" (/\S*)$", r" /host\1", line) for line in out.splitlines())


def test_the_privileged_helper_pods_stat_device_nodes_under_the_nodes_root(monkeypatch):
    """Privileged-pod node access (the mode a user's cluster gets) is StatsNodeDevices too: the stat script runs
    under ``chroot /host`` (here: a local sh with the chroot dropped, no pod); a node without sh/stat is stat'ed
    from the helper under /host; an answer without the marker line (no probe ran) is never "no such path"."""
    from conformance.node import helper_pod

    access = helper_pod.HelperPodNodeAccess(None, ["n0"], "r1")
    scripts = []

    def on_node(node, script):
        scripts.append(script)
        return _sh(script.replace("chroot /host sh -c ", "sh -c ", 1))

    monkeypatch.setattr(access, "_exec", on_node)
    assert access.device_numbers("n0", ["/dev/null", "/no/such"]) == {"/dev/null": _numbers("/dev/null")}
    assert "chroot /host sh -c " in scripts[0]

    def no_chroot(node, script):  # the node has no sh: the helper stats /host<path> (here / stands for /host)
        return "chroot: can't execute 'sh'" if "chroot" in script else _in_helper(script)

    monkeypatch.setattr(access, "_exec", no_chroot)
    assert access.device_numbers("n0", ["/dev/zero"]) == {"/dev/zero": _numbers("/dev/zero")}

    def stat_fails_on_node(node, script):  # the node's sh runs but its stat does not answer: not "missing"
        if "chroot" in script:
            return _sh(script.replace("chroot /host sh -c ", "sh -c ", 1).replace("stat -L", "false"))
        return _in_helper(script)

    monkeypatch.setattr(access, "_exec", stat_fails_on_node)
    assert access.device_numbers("n0", ["/dev/zero", "/no/such"]) == {"/dev/zero": _numbers("/dev/zero")}
    monkeypatch.setattr(access, "_exec", lambda node, script: "")  # nothing ran
    with pytest.raises(helper_pod.NodeAccessUnavailable, match="cannot stat device nodes on node n0"):
        access.device_numbers("n0", ["/dev/zero"])
    assert isinstance(access, StatsNodeDevices)
