#!/usr/bin/env bash
# Run dra-conformance as a Kubernetes Job (job.yaml) on a cluster against that same cluster (in-cluster mode), then
# copy its report out of the Job's pod. `make conformance-in-cluster` calls this. Variables (all optional):
#   KUBECONFIG     the cluster; unset: the running local cluster (`dra-conformance cluster up`), into whose
#                  nodes the suite, reference-driver and busybox images are imported first (offline)
#   LOCAL_CLUSTER  local cluster name (default dra, the name `make cluster-up` gives)
#   IMAGE          suite image (default dra-conformance.local/suite:dev: `dra-conformance images build suite`,
#                  or `docker build -t ... .` and push it where the nodes pull from)
#   SUITE_ARGS     `dra-conformance run` options in the pod (default: reference driver installed from its Helm chart,
#                  core profile, privileged helper pods for the node checks)
#   OUT            where the report goes (default reports/in-cluster-<UTC time>)
#   TIMEOUT        seconds the run may take (default 1800); the Job's activeDeadlineSeconds is TIMEOUT + HOLD_S
#   HOLD_S         seconds the pod keeps the report for its copy after the run (default 600)
#   DRA_CONFORMANCE the CLI on this machine (default .venv/bin/dra-conformance); PYTHON its interpreter
# Exit code: the run's (the suite container's exit code: 0 pass, 1 fail, ...); 3 when it never ran or ended
# without one; 4 for a bad setup (no kubectl, no cluster, another in-cluster Job still running).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DC=${DRA_CONFORMANCE:-.venv/bin/dra-conformance}
IMAGE=${IMAGE:-dra-conformance.local/suite:dev}
SUITE_ARGS=${SUITE_ARGS:---driver reference --driver-deploy helm --allow-install --profile core --node-access privileged-pod}
OUT=${OUT:-reports/in-cluster-$(date -u +%Y%m%d-%H%M%S)}
TIMEOUT=${TIMEOUT:-1800}
HOLD_S=${HOLD_S:-600}
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
kn() { "$KUBECTL" -n dra-conformance "$@"; }
cleanup() {
  kn delete job dra-conformance --ignore-not-found --cascade=foreground --wait=true --timeout=330s >/dev/null || true
  k delete -f "$here/rbac.yaml" --ignore-not-found --wait=true --timeout=180s >/dev/null || true
}
job_state() {  # Complete / Failed once the Job has finished, else empty
  kn get job dra-conformance -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{"\n"}{end}' 2>/dev/null |
    grep -E '^(Complete|Failed)$' | head -1 || true
}
start=$(date +%s)
k apply -f "$here/rbac.yaml" >/dev/null
if kn get job dra-conformance >/dev/null 2>&1; then
  [ -n "$(job_state)" ] || { echo "error: Job dra-conformance/dra-conformance is still running (another in-cluster run):" \
    "wait for it or \`kubectl -n dra-conformance delete job dra-conformance\`" >&2; exit 4; }
  kn delete job dra-conformance --cascade=foreground --wait=true --timeout=330s >/dev/null  # a finished one, kept by its TTL
fi
trap cleanup EXIT
sed -e "s|image: IMAGE|image: $IMAGE|" -e "s|value: \"RUN_ARGS\"|value: \"$SUITE_ARGS\"|" \
    -e "s|activeDeadlineSeconds: [0-9]*|activeDeadlineSeconds: $((TIMEOUT + HOLD_S))|" \
    -e "/name: HOLD_S/{n;s|value: \"[0-9]*\"|value: \"$HOLD_S\"|}" "$here/job.yaml" | k apply -f - >/dev/null
say "job dra-conformance/dra-conformance ($IMAGE): dra-conformance run --cluster existing --in-cluster $SUITE_ARGS"
# the Job's one pod (backoffLimit 0: never a second), once it is running or has ended
pod=""
until [ -n "$pod" ]; do
  pod=$(kn get pods -l batch.kubernetes.io/job-name=dra-conformance --field-selector=status.phase!=Pending \
    -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)
  if [ -z "$pod" ] && [ $(( $(date +%s) - start )) -gt 300 ]; then
    echo "error: the Job's pod did not start in 300 s" >&2
    kn describe pods -l batch.kubernetes.io/job-name=dra-conformance | tail -20; kn describe job dra-conformance | tail -8; exit 3
  fi
  [ -n "$pod" ] || sleep 2
done
kn logs -f "$pod" -c suite &
logs=$!
suite_code() { kn get pod "$pod" -o jsonpath='{.status.containerStatuses[?(@.name=="suite")].state.terminated.exitCode}'; }
until code=$(suite_code) && [ -n "$code" ]; do
  if ! kn get pod "$pod" >/dev/null 2>&1 || [ $(( $(date +%s) - start )) -gt $((TIMEOUT + 60)) ]; then
    echo "error: pod $pod gone or the run past $TIMEOUT s without an exit code" >&2; kill $logs 2>/dev/null; exit 3
  fi
  sleep 5
done
wait $logs 2>/dev/null || true
mkdir -p "$(dirname "$OUT")"
if ! kn exec "$pod" -c report -- test -d /reports/run 2>/dev/null; then
  echo "error: no report to copy: the run wrote none, or pod $pod ended before the copy (HOLD_S=$HOLD_S)" >&2
elif kn cp -c report "$pod:/reports/run" "$OUT" >/dev/null; then
  say "run exit code $code after $(( $(date +%s) - start ))s; report copied to $OUT"
else
  echo "error: kubectl cp of the report from pod $pod failed" >&2
fi
kn exec "$pod" -c report -- touch /reports/collected 2>/dev/null || true
for _ in $(seq 60); do state=$(job_state); [ -n "$state" ] && break; sleep 2; done
say "job ${state:-not finished after 120 s}"
exit "$code"
