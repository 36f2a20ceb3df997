#!/usr/bin/env bash
# Run dra-conformance as a pod on a cluster against that same cluster (in-cluster mode), then copy its report
# out. `make conformance-in-cluster` calls this. Variables (all optional):
#   KUBECONFIG     the cluster; unset: the running local cluster (`dra-conformance cluster up`), into whose
#                  nodes the suite, reference-driver and busybox images are imported first (offline)
#   LOCAL_CLUSTER  local cluster name (default dra, the name `make cluster-up` gives)
#   IMAGE          suite image (default dra-conformance.local/suite:dev: `dra-conformance images build suite`,
#                  or `docker build -t ... .` and push it where the nodes pull from)
#   SUITE_ARGS     `dra-conformance run` options in the pod (default: reference driver from its Helm chart,
#                  core profile, privileged helper pods for the node checks)
#   OUT            where the report goes (default reports/in-cluster-<UTC time>)
#   TIMEOUT        seconds the run may take (default 1800)
#   DRA_CONFORMANCE the CLI on this machine (default .venv/bin/dra-conformance); PYTHON its interpreter
# Exit code: the pod's `dra-conformance run` exit code (0 pass, 1 fail, ...); 3 when the pod never ran.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DC=${DRA_CONFORMANCE:-.venv/bin/dra-conformance}
IMAGE=${IMAGE:-dra-conformance.local/suite:dev}
SUITE_ARGS=${SUITE_ARGS:---driver reference --driver-deploy helm --profile core --node-access privileged-pod}
OUT=${OUT:-reports/in-cluster-$(date -u +%Y%m%d-%H%M%S)}
TIMEOUT=${TIMEOUT:-1800}
KUBECTL=${KUBECTL:-$(command -v kubectl || ls -1 "${XDG_CACHE_HOME:-$HOME/.cache}"/dra-conformance/k8s/*/bin/kubectl 2>/dev/null | tail -1)}
[ -x "$KUBECTL" ] || { echo "error: no kubectl on PATH or in the cache; run \`make setup\` or set KUBECTL" >&2; exit 4; }
say() { echo "[in-cluster $(date -u +%H:%M:%S)] $*"; }

if [ -z "${KUBECONFIG:-}" ]; then
  status=$($DC cluster status ${LOCAL_CLUSTER:+--name "$LOCAL_CLUSTER"}) || {
    echo "error: KUBECONFIG is unset and no local cluster is running: \`make cluster-up\` or set KUBECONFIG" >&2; exit 4; }
  export KUBECONFIG=$(sed -n 's/^kubeconfig: //p' <<<"$status")
  name=$(sed -n 's/^cluster \([^:]*\):.*/\1/p' <<<"$status")
  say "local cluster $name: building and importing the suite, reference-driver and busybox images"
  $DC images build suite reference-driver busybox
  $DC images import suite reference-driver busybox --cluster "$name"
  # probe and helper pods of an existing cluster default to busybox:1.36: the offline busybox under that name
  "${PYTHON:-.venv/bin/python}" - "$name" <<'PY'
import subprocess, sys
from conformance_lab.local.images import node_targets
_, ctr, nodes = node_targets(sys.argv[1])
for node, socket in nodes:
    subprocess.run([str(ctr), "-a", str(socket), "-n", "k8s.io", "images", "tag", "--force",
                    "dra-conformance.local/busybox:1", "docker.io/library/busybox:1.36"], check=True, capture_output=True)
PY
fi
k() { "$KUBECTL" "$@"; }
cleanup() {
  k -n dra-conformance delete pod dra-conformance --ignore-not-found --wait=true --timeout=330s >/dev/null || true
  k delete -f "$here/rbac.yaml" --ignore-not-found --wait=true --timeout=180s >/dev/null || true
}
trap cleanup EXIT
start=$(date +%s)
k apply -f "$here/rbac.yaml" >/dev/null
sed -e "s|image: IMAGE|image: $IMAGE|" -e "s|value: \"RUN_ARGS\"|value: \"$SUITE_ARGS\"|" "$here/pod.yaml" | k apply -f - >/dev/null
say "pod dra-conformance/dra-conformance ($IMAGE): dra-conformance run --cluster existing --in-cluster $SUITE_ARGS"
k -n dra-conformance wait pod/dra-conformance --for=condition=Ready --timeout=300s >/dev/null || {
  k -n dra-conformance describe pod dra-conformance | tail -20; exit 3; }
k -n dra-conformance logs -f dra-conformance &
logs=$!
until k -n dra-conformance exec dra-conformance -- test -e /reports/exit-code 2>/dev/null; do
  phase=$(k -n dra-conformance get pod dra-conformance -o jsonpath='{.status.phase}')
  if [ "$phase" != Running ] || [ $(( $(date +%s) - start )) -gt "$TIMEOUT" ]; then
    echo "error: pod $phase after $(( $(date +%s) - start ))s without a finished run" >&2; kill $logs 2>/dev/null; exit 3
  fi
  sleep 5
done
code=$(k -n dra-conformance exec dra-conformance -- cat /reports/exit-code)
kill $logs 2>/dev/null || true
mkdir -p "$OUT"
k cp dra-conformance/dra-conformance:/reports/run "$OUT" >/dev/null
k -n dra-conformance exec dra-conformance -- touch /reports/collected
say "run exit code $code after $(( $(date +%s) - start ))s; report copied to $OUT"
exit "$code"
