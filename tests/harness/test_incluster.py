"""In-cluster mode (conformance/k8s/incluster.py): the pod's service account as a kubeconfig, and when a run
uses it."""

from __future__ import annotations

import base64

import pytest
import yaml
from kubernetes import config as kconfig

from conformance import cli as main_cli
from conformance.core.errors import ConfigError
from conformance.k8s import incluster

ENV = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.fixture
def sa_dir(tmp_path):
    """A service account volume as the kubelet mounts it (token, ca.crt, namespace)."""
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("tok-123")
    (sa / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    (sa / "namespace").write_text("dra-conformance\n")
    return sa


def test_kubeconfig_points_at_the_service_account_without_copying_its_token(sa_dir, tmp_path):
    """Server from the service variables, CA inlined, token by file (rotated tokens are read), namespace kept;
    the Python client loads it with the token as a bearer header."""
    path = incluster.write_kubeconfig(tmp_path / "kc" / "kubeconfig", ENV, sa_dir)
    doc = yaml.safe_load(path.read_text())
    assert doc["clusters"][0]["cluster"]["server"] == "https://10.0.0.1:443"
    assert base64.b64decode(doc["clusters"][0]["cluster"]["certificate-authority-data"]).startswith(b"-----BEGIN")
    assert doc["users"][0]["user"] == {"tokenFile": str(sa_dir / "token")}
    assert doc["contexts"][0]["context"]["namespace"] == "dra-conformance"
    assert "tok-123" not in path.read_text() and (path.stat().st_mode & 0o777) == 0o600
    client = kconfig.new_client_from_config(config_file=str(path), persist_config=False)
    assert client.configuration.api_key["BearerToken"] == "Bearer tok-123"
    v6 = incluster.kubeconfig({**ENV, "KUBERNETES_SERVICE_HOST": "fd00::1"}, sa_dir)
    assert v6["clusters"][0]["cluster"]["server"] == "https://[fd00::1]:443"


def test_outside_a_pod_the_error_names_what_is_missing(tmp_path):
    with pytest.raises(ConfigError, match=r"KUBERNETES_SERVICE_HOST.*token.*missing.*--kubeconfig"):
        incluster.kubeconfig({}, tmp_path)


def test_detected_only_for_existing_clusters_in_a_pod_without_any_kubeconfig(sa_dir, tmp_path):
    home = tmp_path / "home"
    assert incluster.wanted("existing", None, False, ENV, sa_dir, home)
    assert not incluster.wanted("local", None, False, ENV, sa_dir, home)
    assert not incluster.wanted("existing", "/x/kubeconfig", False, ENV, sa_dir, home)
    assert not incluster.wanted("existing", None, False, {**ENV, "KUBECONFIG": "/k"}, sa_dir, home)
    assert not incluster.wanted("existing", None, False, ENV, tmp_path / "no-sa", home)
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text("{}")
    assert not incluster.wanted("existing", None, False, ENV, sa_dir, home)
    assert incluster.wanted("existing", None, True, {}, tmp_path, home)  # forced: written (or refused) later


def test_forced_in_cluster_refuses_contradictions_with_exit_4(capsys):
    with pytest.raises(ConfigError, match="add --cluster existing"):
        incluster.wanted("local", None, True)
    with pytest.raises(ConfigError, match="exclude each other"):
        incluster.wanted("existing", "/k", True)
    assert main_cli.main(["run", "--in-cluster"]) == 4
    assert "--cluster local cannot run in-cluster" in capsys.readouterr().err


def test_forced_in_cluster_outside_a_pod_exits_4_naming_what_is_missing(capsys, monkeypatch, tmp_path):
    """No service account variables here (and no token file on a development machine or CI runner)."""
    for var in (*ENV, "KUBECONFIG"):
        monkeypatch.delenv(var, raising=False)
    assert main_cli.main(["run", "--cluster", "existing", "--in-cluster", "--report-dir", str(tmp_path / "r")]) == 4
    assert "not running in a pod with a service account" in capsys.readouterr().err
