"""The ``local`` cluster provider: a real Kubernetes cluster (etcd, kube-apiserver, controller-manager,
scheduler, kube-proxy, one containerd 2 + kubelet per node, optional kwok fake nodes) run as host processes.

    from conformance_lab.local import LocalCluster, LocalClusterConfig
    handle = LocalCluster(LocalClusterConfig(name="dra", nodes=2, feature_gates="all")).up()
"""

from conformance_lab.local.cluster import LocalCluster
from conformance_lab.local.config import LocalClusterConfig
from conformance_lab.local.handle import LocalClusterHandle, LocalNode
from conformance_lab.local.processes import HostProcess

__all__ = ["LocalCluster", "LocalClusterConfig", "LocalClusterHandle", "LocalNode", "HostProcess"]
