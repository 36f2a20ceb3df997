"""The node image's pod network: a small stand-in for kindnetd, shipped as ``/kind/manifests/default-cni.yaml``.

kind applies that file on the first control-plane node after `kubeadm init` ("Installing CNI"); a file that
contains "would you kindly patch this file" gets a ``CONTROL_PLANE_ENDPOINT`` env var added to the first
container of its DaemonSet (kind ``pkg/cluster/internal/create/actions/installcni``). kindnetd itself is not
buildable offline (its source is a nested module outside the ``sigs.k8s.io/kind`` module zip), so this
DaemonSet does what the conformance runs need from it, on every node: write a ``ptp`` + ``host-local``
conflist for the node's ``spec.podCIDR`` into ``/etc/cni/net.d`` and route every other node's podCIDR to that
node's InternalIP. No masquerade and no NetworkPolicy (nothing leaves the cluster offline).
Source: kindnetd's behaviour (kind ``images/kindnetd``), CNI plugins ptp/host-local (containernetworking/plugins).
"""

from __future__ import annotations

import json

import yaml

NAME = "dra-conformance-podnet"
CONFLIST = "/etc/cni/net.d/10-dra-conformance-podnet.conflist"

# Reads the Node objects with the pod's service-account token (kubectl from the node, hostPath-mounted).
SCRIPT = r"""set -u
sa=/var/run/secrets/kubernetes.io/serviceaccount
api() { kubectl --server="https://${CONTROL_PLANE_ENDPOINT}" --token="$(cat $sa/token)" \
  --certificate-authority=$sa/ca.crt "$@"; }
tmpl='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}'
while true; do
  if nodes=$(api get nodes -o jsonpath="$tmpl"); then
    while read -r name cidr ip; do
      [ -n "${cidr:-}" ] && [ -n "${ip:-}" ] || continue
      if [ "$name" = "$NODE_NAME" ]; then
        conf=$(printf "$CONFLIST_TEMPLATE" "$cidr")
        if [ "$(cat "$CONFLIST" 2>/dev/null)" != "$conf" ]; then
          printf '%s' "$conf" >"$CONFLIST.tmp" && mv "$CONFLIST.tmp" "$CONFLIST" && echo "wrote $CONFLIST for $cidr"
        fi
      else
        ip route replace "$cidr" via "$ip" || echo "route $cidr via $ip failed"
      fi
    done <<<"$nodes"
  fi
  sleep 5
done
"""


def conflist_template() -> str:
    """The CNI conflist with ``%s`` where the node's podCIDR goes (printf template)."""
    conf = {
        "cniVersion": "1.0.0",
        "name": NAME,
        "plugins": [
            {
                "type": "ptp",
                "mtu": 1500,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": "__CIDR__"}]], "routes": [{"dst": "0.0.0.0/0"}]},
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
    return json.dumps(conf, indent=2).replace("__CIDR__", "%s")


def manifest(image: str) -> str:
    """The multi-document YAML kind applies (ServiceAccount, ClusterRole, binding, DaemonSet on ``image``,
    which must have bash and iproute2: the node image's kube-proxy image)."""
    labels = {"app": NAME}
    container = {
        "name": "podnet",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": ["/usr/bin/bash", "-c", SCRIPT],
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "CONFLIST", "value": CONFLIST},
            {"name": "CONFLIST_TEMPLATE", "value": conflist_template()},
        ],
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": "cni-conf", "mountPath": "/etc/cni/net.d"},
            {"name": "kubectl", "mountPath": "/usr/local/bin/kubectl", "readOnly": True},
        ],
    }
    docs = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "namespace": "kube-system"}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": NAME},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": NAME},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": "kube-system"}],
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": NAME, "namespace": "kube-system", "labels": labels},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "hostNetwork": True,
                        "serviceAccountName": NAME,
                        "priorityClassName": "system-node-critical",
                        "tolerations": [{"operator": "Exists"}],
                        "containers": [container],
                        "volumes": [
                            {"name": "cni-conf", "hostPath": {"path": "/etc/cni/net.d", "type": "DirectoryOrCreate"}},
                            {"name": "kubectl", "hostPath": {"path": "/usr/bin/kubectl", "type": "File"}},
                        ],
                    },
                },
            },
        },
    ]
    head = "# dra-conformance pod network (kindnetd stand-in); would you kindly patch this file\n"
    return head + yaml.safe_dump_all(docs, sort_keys=False)


STORAGE = """# no provisioner in the offline node image: a StorageClass for manifests that name "standard"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
"""
