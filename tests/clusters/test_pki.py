"""The generated PKI: chain, SANs, and the identities NodeRestriction and RBAC rely on."""

import ipaddress

import yaml
from conformance_lab.local.pki import Pki, write_kubeconfig
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _load(path):
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_apiserver_cert_has_in_cluster_and_host_sans(tmp_path):
    pki = Pki(tmp_path)
    pki.create()
    cert, _ = pki.issue_apiserver("10.0.0.1", "192.0.2.2")
    c = _load(cert)
    c.verify_directly_issued_by(_load(pki.ca_cert))
    sans = c.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {"kubernetes.default.svc", "kubernetes", "localhost"} <= set(sans.get_values_for_type(x509.DNSName))
    assert {ipaddress.ip_address(i) for i in ("10.0.0.1", "127.0.0.1", "192.0.2.2")} <= set(
        sans.get_values_for_type(x509.IPAddress)
    )
    eku = c.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in eku


def test_kubelet_client_cert_is_a_node_identity(tmp_path):
    pki = Pki(tmp_path)
    pki.create()
    cert, key = pki.issue("kubelet-0", "system:node:dra-node-0", "system:nodes")
    c = _load(cert)
    c.verify_directly_issued_by(_load(pki.ca_cert))
    assert c.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "system:node:dra-node-0"
    assert c.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "system:nodes"
    assert oct(key.stat().st_mode & 0o777) == "0o600"


def test_kubeconfig_embeds_credentials(tmp_path):
    pki = Pki(tmp_path)
    pki.create()
    cert, key = pki.issue("admin", "admin", "system:masters")
    path = write_kubeconfig(tmp_path / "k.yaml", "https://127.0.0.1:6443", pki.ca_cert, cert, key, "admin")
    doc = yaml.safe_load(path.read_text())
    assert doc["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"
    assert doc["users"][0]["user"]["client-certificate-data"]
    assert doc["current-context"] == "local"
