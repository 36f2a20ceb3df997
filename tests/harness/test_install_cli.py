"""Unit tests of `dra-conformance install` pieces that need no cluster."""

import pytest
from conformance_lab import install_cli

from conformance.core import errors
from conformance.core.objects import Obj


def _node(name, *images):
    return Obj({"kind": "Node", "metadata": {"name": name}, "status": {"images": [{"names": list(images)}]}})


def test_install_waits_until_every_node_lists_the_imported_images(monkeypatch):
    """The kubelet posts a changed image list with a later node status: install returns only once every Node
    lists the imported images (an existing-cluster run picks its relay image from there), polling meanwhile."""
    relay = "docker.io/library/dra-reference-driver:dev"
    answers = iter([[_node("a", relay), _node("b")], [_node("a", relay), _node("b", relay)]])
    monkeypatch.setattr(install_cli.discovery, "nodes", lambda k8s: next(answers))
    monkeypatch.setattr(install_cli.waits, "poll", _fast_poll)
    install_cli._await_node_images(object(), {relay})  # second answer lists it on both nodes


def test_install_names_images_no_node_ever_lists(monkeypatch):
    monkeypatch.setattr(install_cli.discovery, "nodes", lambda k8s: [_node("a")])
    monkeypatch.setattr(install_cli.waits, "poll", _fast_poll)
    with pytest.raises(errors.ClusterUnavailable, match="dra-reference-driver"):
        install_cli._await_node_images(object(), {"docker.io/library/dra-reference-driver:dev"})


def _fast_poll(check, *, timeout, interval, scale=True):
    return any(check() for _ in range(2))
