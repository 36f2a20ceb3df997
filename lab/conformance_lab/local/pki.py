"""The cluster PKI and kubeconfigs, generated with the `cryptography` package.

One CA signs: the kube-apiserver serving cert (SANs: kubernetes, kubernetes.default(.svc(.cluster.local)),
localhost, 127.0.0.1, the Service IP, the node IP), an admin client cert (O=system:masters), one client
cert per kubelet (CN=system:node:<name>, O=system:nodes, so the Node authorizer and NodeRestriction
admission apply), a kube-proxy client cert (CN=system:kube-proxy, bound by the default
system:node-proxier ClusterRoleBinding). Plus the service-account RSA key pair.
Source: local-cluster.md §3.1; Kubernetes "PKI certificates and requirements" (kubeadm).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=7)


def _write(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _key_pem(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


class Pki:
    """Certificates under ``directory`` (``ca.crt``, ``<name>.crt``/``.key``, ``sa.key``/``sa.pub``).

    :meth:`create` makes the CA and the service-account keys; :meth:`issue` signs a leaf.
    """

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.ca_cert = self.dir / "ca.crt"
        self.ca_key = self.dir / "ca.key"
        self.sa_key = self.dir / "sa.key"
        self.sa_pub = self.dir / "sa.pub"

    def cert(self, name: str) -> Path:
        return self.dir / f"{name}.crt"

    def key(self, name: str) -> Path:
        return self.dir / f"{name}.key"

    def create(self) -> None:
        """Generate the CA (EC P-256, 7 days) and the service-account RSA-2048 key pair."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name("dra-conformance-ca"))
            .issuer_name(_name("dra-conformance-ca"))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        _write(self.ca_key, _key_pem(key))
        _write(self.ca_cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
        sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _write(self.sa_key, _key_pem(sa))
        _write(
            self.sa_pub,
            sa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
            0o644,
        )

    def issue(
        self,
        name: str,
        cn: str,
        org: str | None = None,
        *,
        server: bool = False,
        dns: tuple[str, ...] = (),
        ips: tuple[str, ...] = (),
    ) -> tuple[Path, Path]:
        """Sign a leaf cert for ``cn``/``org`` (client auth; plus server auth and SANs when ``server``).

        Returns (cert path, key path). Raises FileNotFoundError if :meth:`create` has not run.
        """
        ca_key = serialization.load_pem_private_key(self.ca_key.read_bytes(), password=None)
        ca = x509.load_pem_x509_certificate(self.ca_cert.read_bytes())
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] + ([ExtendedKeyUsageOID.SERVER_AUTH] if server else [])
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(cn, org))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        )
        if dns or ips:
            sans = [x509.DNSName(d) for d in dns] + [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        _write(self.key(name), _key_pem(key))
        _write(self.cert(name), cert.public_bytes(serialization.Encoding.PEM), 0o644)
        return self.cert(name), self.key(name)

    def issue_apiserver(self, service_ip: str, node_ip: str) -> tuple[Path, Path]:
        """The kube-apiserver serving cert with the in-cluster and host SANs."""
        dns = (
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "localhost",
        )
        ips = tuple(dict.fromkeys(("127.0.0.1", service_ip, node_ip)))
        return self.issue("apiserver", "kube-apiserver", server=True, dns=dns, ips=ips)


def write_kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path, user: str) -> Path:
    """Write a kubeconfig with embedded CA, client cert and key (so it stays valid when copied).

    Shape: one cluster ``local``, one user ``user``, current context ``local``.
    """

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "local",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority-data": b64(ca)}}],
        "users": [{"name": user, "user": {"client-certificate-data": b64(cert), "client-key-data": b64(key)}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
    }
    _write(path, yaml.safe_dump(doc).encode())
    return path
