"""The ``local`` cluster provider: a real Kubernetes cluster (etcd, kube-apiserver, controller-manager,
scheduler, kube-proxy, one containerd 2 + kubelet per node, optional kwok fake nodes) run as host processes.

    from conformance.clusters.local import LocalCluster, LocalClusterConfig
    handle = LocalCluster(LocalClusterConfig(name="dra", nodes=2, feature_gates="all")).up()
"""

from .cluster import LocalCluster
from .config import LocalClusterConfig
from .handle import LocalClusterHandle, LocalNode
from .processes import HostProcess

__all__ = ["LocalCluster", "LocalClusterConfig", "LocalClusterHandle", "LocalNode", "HostProcess"]
