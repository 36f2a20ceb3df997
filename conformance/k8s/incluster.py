"""In-cluster mode: the suite running as a pod, talking to the cluster that runs it.

The pod's service account is turned into an ordinary kubeconfig file (server from
``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT``, the service account's CA, ``tokenFile`` pointing at
its projected token), so everything downstream that takes ``--kubeconfig`` (our client, helm, kubectl) works
unchanged. The file holds no secret: the token stays in the service account volume. Source: Kubernetes
"Accessing the Kubernetes API from a Pod" (service account volume at
/var/run/secrets/kubernetes.io/serviceaccount: token, ca.crt, namespace); client-go ``rest.InClusterConfig``;
kubeconfig ``users[].user.tokenFile``.

Chosen rule (ci/README.md "In-cluster mode"): ``run --cluster existing --in-cluster`` forces it; with
``--cluster existing`` and neither ``--kubeconfig``, ``$KUBECONFIG`` nor ``~/.kube/config``, a pod (the
variables and the token file present) is detected and uses it too.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from conformance.core.errors import ConfigError

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
HOST_VAR, PORT_VAR = "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"


def in_pod(env: Mapping[str, str] = os.environ, sa_dir: Path = SERVICE_ACCOUNT_DIR) -> bool:
    """Whether this process runs in a pod with a service account token (the API server's variables set and
    ``sa_dir/token`` present)."""
    return bool(env.get(HOST_VAR)) and bool(env.get(PORT_VAR)) and (sa_dir / "token").is_file()


def has_kubeconfig(env: Mapping[str, str] = os.environ, home: Path | None = None) -> bool:
    """Whether a kubeconfig would be found without ``--kubeconfig``: ``$KUBECONFIG`` or ``~/.kube/config``."""
    return bool(env.get("KUBECONFIG")) or ((home or Path.home()) / ".kube" / "config").is_file()


def kubeconfig(env: Mapping[str, str] = os.environ, sa_dir: Path = SERVICE_ACCOUNT_DIR) -> dict:
    """The kubeconfig document of the pod's service account (context ``in-cluster``, its namespace as the
    default). Raises ConfigError naming what is missing when this is not a pod with a service account."""
    host, port = env.get(HOST_VAR, ""), env.get(PORT_VAR, "")
    missing = [v for v in (HOST_VAR, PORT_VAR) if not env.get(v)]
    missing += [str(sa_dir / f) for f in ("token", "ca.crt") if not (sa_dir / f).is_file()]
    if missing:
        raise ConfigError(
            f"not running in a pod with a service account: {', '.join(missing)} missing",
            source="--in-cluster",
            fix="run the suite as a pod with automountServiceAccountToken (ci/in-cluster/), or pass --kubeconfig",
        )
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    ca = base64.b64encode((sa_dir / "ca.crt").read_bytes()).decode()
    ns_file = sa_dir / "namespace"
    namespace = ns_file.read_text().strip() if ns_file.is_file() else "default"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "in-cluster", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "service-account", "user": {"tokenFile": str(sa_dir / "token")}}],
        "contexts": [
            {
                "name": "in-cluster",
                "context": {"cluster": "in-cluster", "user": "service-account", "namespace": namespace},
            }
        ],
        "current-context": "in-cluster",
    }


def write_kubeconfig(dest: Path, env: Mapping[str, str] = os.environ, sa_dir: Path = SERVICE_ACCOUNT_DIR) -> Path:
    """Write :func:`kubeconfig` to ``dest`` (mode 0600); returns ``dest``. Raises ConfigError (see above)."""
    doc = kubeconfig(env, sa_dir)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        yaml.safe_dump(doc, out, sort_keys=False)
    return dest


def wanted(
    cluster: str,
    kubeconfig_path: str | None,
    forced: bool,
    env: Mapping[str, str] = os.environ,
    sa_dir: Path = SERVICE_ACCOUNT_DIR,
    home: Path | None = None,
) -> bool:
    """Whether a run uses in-cluster mode: ``forced`` (``--in-cluster``, which needs ``--cluster existing``
    and no ``--kubeconfig``), or detected (``--cluster existing``, no kubeconfig anywhere, :func:`in_pod`).
    Raises ConfigError on a contradictory choice."""
    if forced:
        if cluster != "existing":
            raise ConfigError(f"--cluster {cluster} cannot run in-cluster", source="--in-cluster",
                              fix="add --cluster existing")  # fmt: skip
        if kubeconfig_path:
            raise ConfigError("--in-cluster and --kubeconfig exclude each other", source="--in-cluster",
                              fix="drop one of them")  # fmt: skip
        return True
    return cluster == "existing" and not kubeconfig_path and not has_kubeconfig(env, home) and in_pod(env, sa_dir)
