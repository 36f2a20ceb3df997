# dra-conformance — make targets are the interface. `make help` lists them.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
K8S_VERSION ?=
K8S_VERSIONS ?= 1.34 1.35 1.36 1.37
DRIVER ?= reference
PROFILE ?= standard
FEATURE_GATES ?= all
NODES ?= 2
WORKERS ?=
PYTEST_ARGS ?=
RUN_ARGS ?=
FAULTS ?=
VALIDATE_ARGS ?=
DRIVER_DEPLOY ?=
BENCH_NODES ?= 100
BENCH_DEVICES ?= 8
BENCH_PODS ?= 1000
BENCH_SCALE ?= 10,100,500
BENCH_ARGS ?=
CLUSTER ?= local
KIND ?= 1
K8S_FLAG := $(if $(K8S_VERSION),--k8s-version $(K8S_VERSION))
WORKERS_FLAG := $(if $(WORKERS),--workers $(WORKERS))
# the main job: one xdist worker per device slot of the reference driver's 8 GPUs per node (issue 26 §1)
CONFORMANCE_WORKERS := $(or $(WORKERS),8)
DEPLOY_FLAG := $(if $(DRIVER_DEPLOY),--driver-deploy $(DRIVER_DEPLOY))

.DEFAULT_GOAL := help
.PHONY: help setup setup-all venv test unit e2e conformance list versions paths cluster-up cluster-down \
        cluster-status cluster-logs lint wheels clean matrix report bench-cluster validate-suite images bench kind-node-image harness-scale

help: ## list every target
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'
	@echo
	@echo "  variables: K8S_VERSION=1.34..1.37 DRIVER=$(DRIVER) PROFILE=$(PROFILE) FEATURE_GATES=$(FEATURE_GATES) NODES=$(NODES) WORKERS=(conformance: 8; other targets: their own; 0 = serial)"

# Go module downloads beside the venv's pip install (standard library only; setup retries what fails)
PREFETCH = PYTHONPATH=.:lab $${PYTHON:-python3} -m conformance_lab.toolchain prefetch
setup: ## what `make conformance` needs: venv, Debian packages, Kubernetes/etcd/containerd, Allure CLI, pause/busybox images; the rest builds on first use (KIND=1 given: also the kind node image)
	@export DRA_CONFORMANCE_SETUP_START=$$(date +%s); $(PREFETCH) $(K8S_FLAG) 2>/dev/null & pre=$$!; bash scripts/bootstrap-venv.sh; \
	  rc=$$?; wait $$pre; [ $$rc = 0 ] && $(PY) -m conformance_lab.toolchain setup $(K8S_FLAG)
	$(if $(and $(filter command line environment,$(origin KIND)),$(KIND)),@$(MAKE) --no-print-directory kind-node-image)

setup-all: ## everything (CI): setup + kwok/kind/helm/registry/other drivers, every offline image, the kind node image (KIND= to skip it)
	@export DRA_CONFORMANCE_SETUP_START=$$(date +%s); $(PREFETCH) --all $(K8S_FLAG) 2>/dev/null & pre=$$!; bash scripts/bootstrap-venv.sh; \
	  rc=$$?; wait $$pre; [ $$rc = 0 ] && $(PY) -m conformance_lab.toolchain setup --all $(if $(KIND),,--skip kind) $(K8S_FLAG)

kind-node-image: ## build (or find cached) the offline kind node image for K8S_VERSION (nerdctl, kubeadm, coredns, crictl, Debian rootfs)
	$(VENV)/bin/dra-conformance kind build-node-image $(K8S_FLAG)

venv: ## create .venv with the package (editable) and pinned dependencies
	@bash scripts/bootstrap-venv.sh

E2E_WORKERS ?= 3
test: lint ## lint, then all of the project's own tests: unit (-n 2) beside the e2e tests that need the host alone (cluster_lifecycle), then the other e2e tests on E2E_WORKERS
	@$(PY) -m conformance.protos >/dev/null
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-unit test-alone
	$(PY) -m pytest tests -m "e2e and not cluster_lifecycle" -n $(E2E_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=40 --junitxml=reports/e2e-parallel.xml $(PYTEST_ARGS)

unit: ## run only the unit tests (no cluster)
	@$(PY) -m conformance.protos >/dev/null
	$(PY) -m pytest tests -m "not e2e" $(PYTEST_ARGS)

e2e: ## run only our end-to-end tests (real local cluster)
	@$(PY) -m conformance.protos >/dev/null
	$(PY) -m pytest tests -m e2e $(PYTEST_ARGS)

test-unit: ## make test's unit tests (-n 2); make test runs them beside test-alone (its output is shown when each ends)
	@$(PY) -m conformance.protos >/dev/null
	$(PY) -m pytest tests -m "not e2e" -n 2 --durations=10 $(PYTEST_ARGS)

test-alone: ## make test's e2e tests marked cluster_lifecycle, one at a time: no other cluster may run (kind's host diff, kube-proxy chains); unit tests start none
	@$(PY) -m conformance.protos >/dev/null
	$(PY) -m pytest tests -m "e2e and cluster_lifecycle" --durations=10 $(PYTEST_ARGS)
.PHONY: test-unit test-alone

e2e-durations: ## rewrite tests/e2e/durations.json (the parallel phase's order: longest first) from the last make test's reports/e2e-parallel.xml
	$(PY) -m conformance_tools.e2e_order refresh --junit reports/e2e-parallel.xml

e2e-makespan: ## expected wall time of make test's parallel phase from tests/e2e/durations.json: old order vs now, on 3 and 4 workers
	$(PY) -m conformance_tools.e2e_order simulate --workers 3 4
.PHONY: e2e-durations e2e-makespan

conformance: ## main job: local cluster (CLUSTER=kind: a kind cluster) + reference driver (DRIVER=...), PROFILE suites, report in reports/
	$(VENV)/bin/dra-conformance run --cluster $(CLUSTER) --driver $(DRIVER) --profile $(PROFILE) \
	  --feature-gates $(FEATURE_GATES) $(K8S_FLAG) --workers $(CONFORMANCE_WORKERS) $(or $(DEPLOY_FLAG),$(if $(filter kind,$(CLUSTER)),--driver-deploy helm)) \
	  $(RUN_ARGS) $(if $(PYTEST_ARGS),-- $(PYTEST_ARGS))

matrix: ## run the suites on each of K8S_VERSIONS; one report with a version x capability table
	$(VENV)/bin/dra-conformance matrix --versions $(K8S_VERSIONS) -- --cluster local --driver $(DRIVER) \
	  --profile $(PROFILE) --feature-gates $(FEATURE_GATES) $(WORKERS_FLAG) $(RUN_ARGS) $(if $(PYTEST_ARGS),-- $(PYTEST_ARGS))

validate-suite: ## fault-detection matrix: every reference-driver fault (FAULTS=a,b) fails its fixtures/faults.yaml tests, the healthy driver none (serial; WORKERS=N: device shards)
	$(VENV)/bin/dra-conformance validate-suite $(if $(FAULTS),--faults $(FAULTS)) --feature-gates $(FEATURE_GATES) \
	  $(K8S_FLAG) $(DEPLOY_FLAG) $(WORKERS_FLAG) $(VALIDATE_ARGS)

# faults about which device a test gets: they must be caught in device shards too (breaker finding 3)
SHARDED_FAULTS ?= device-by-position,wrong-cdi-device,kubelet-device-mismatch,request-names-rotated
.PHONY: validate-suite-sharded
validate-suite-sharded: ## validate-suite of the device-choice faults (SHARDED_FAULTS, or FAULTS=) on WORKERS (default 3) xdist workers in device shards; not in make test
	@$(MAKE) --no-print-directory validate-suite WORKERS=$(or $(WORKERS),3) FAULTS=$(or $(FAULTS),$(SHARDED_FAULTS))

# faults of the cluster itself (issue 27 §2): CLUSTER_FAULTS=a,b of apiserver-restart, etcd-stopped-30s,
# credentials-revoked, report-disk-full (default all; needs root for the tmpfs)
CLUSTER_FAULTS ?=
.PHONY: cluster-faults
cluster-faults: ## break the cluster itself mid-run (API server, etcd, credentials, report disk); prints fault, verdict, classes, evidence, time to end, leftovers; not in make test
	$(PY) -m conformance_tools.cluster_faults $(if $(CLUSTER_FAULTS),--faults $(CLUSTER_FAULTS))

# dra-example-driver's releases x the same profile: verdicts, failures and the upstream change fixing each
HISTORY_VERSIONS ?=
HISTORY_PROFILE ?= standard
.PHONY: example-driver-history
example-driver-history: ## qualify every pinned dra-example-driver release (HISTORY_VERSIONS=v0.2.1,..) with HISTORY_PROFILE; prints version x verdict x failures x upstream fix (reports/example-driver-history/history.md); not in make test
	$(VENV)/bin/dra-conformance example-driver-history --profile $(HISTORY_PROFILE) \
	  $(if $(HISTORY_VERSIONS),--versions $(HISTORY_VERSIONS)) $(K8S_FLAG) $(HISTORY_ARGS)

report: ## regenerate the report of RUN_DIR (default reports/latest) from its results
	$(VENV)/bin/dra-conformance report $(or $(RUN_DIR),reports/latest)

list: ## print the tests a PROFILE selects (no cluster needed)
	$(VENV)/bin/dra-conformance list --profile $(PROFILE) --driver $(DRIVER)

images: ## build the offline OCI images a run needs (IMAGES="names", default all); IMAGES_TO=DIR also exports them there
	$(VENV)/bin/dra-conformance images build $(IMAGES)
	$(if $(IMAGES_TO),$(VENV)/bin/dra-conformance images export --to $(IMAGES_TO) $(IMAGES))

versions: ## print every pinned version (lab/conformance_lab/versions.toml)
	@$(PY) -m conformance_lab.toolchain versions

paths: ## print where the cached binaries live
	@$(PY) -m conformance_lab.toolchain paths $(K8S_FLAG)

cluster-up: ## start the local cluster (NODES, K8S_VERSION, FEATURE_GATES)
	$(VENV)/bin/dra-conformance cluster up --nodes $(NODES) --feature-gates $(FEATURE_GATES) $(K8S_FLAG) $(CLUSTER_ARGS)

cluster-down: ## stop the local cluster and remove everything it created
	$(VENV)/bin/dra-conformance cluster down

cluster-status: ## show the local cluster's nodes, versions and feature gates
	$(VENV)/bin/dra-conformance cluster status

cluster-logs: ## print where the component logs are
	$(VENV)/bin/dra-conformance cluster logs

bench: ## DRA scheduling benchmark: kwok fake nodes (BENCH_NODES x BENCH_DEVICES), BENCH_PODS pods, scale points BENCH_SCALE; report in reports/bench/<id>/
	$(VENV)/bin/dra-conformance bench --nodes $(BENCH_NODES) --devices $(BENCH_DEVICES) --pods $(BENCH_PODS) \
	  --scale-points $(BENCH_SCALE) $(K8S_FLAG) $(BENCH_ARGS)

bench-cluster: ## print local-cluster bring-up and tear-down times (3 runs)
	$(PY) benchmarks/cluster_bringup.py --repeat 3

HARNESS_NODES := $(if $(filter command line,$(origin NODES)),$(NODES),100 300 1000)
harness-scale: ## seconds of discovery, invariants and sweep vs kwok fleet size (NODES="100 300 1000"; not in make test); report in reports/harness-scale/<time>/
	$(PY) -m conformance_tools.bench.harness_scale --nodes $(HARNESS_NODES) $(HARNESS_ARGS)

wheels: ## build the three distributions (plugin, lab, tools) into dist/
	rm -rf dist && $(PY) -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation -w dist . ./lab ./tools
	rm -rf lab/build tools/build
	@ls -l dist

lint: ## layer contract (import-linter), lint rules and formatting (ruff; config in pyproject.toml)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean: ## remove build outputs and reports (keeps the binary cache)
	rm -rf build reports/*/ reports/latest .pytest_cache

.PHONY: conformance-in-cluster
CLUSTER_ARGS ?=
IN_CLUSTER_ARGS ?= --driver reference --driver-deploy helm --allow-install --profile core --node-access privileged-pod
conformance-in-cluster: ## the suite as a Kubernetes Job against the cluster running it (KUBECONFIG; unset: the local cluster of `make cluster-up CLUSTER_ARGS=--daemonset-paths`, images imported); IN_CLUSTER_ARGS, RUN_ARGS; report in reports/in-cluster-<time>/ (ci/in-cluster/)
	DRA_CONFORMANCE=$(VENV)/bin/dra-conformance PYTHON=$(PY) SUITE_ARGS="$(IN_CLUSTER_ARGS) $(RUN_ARGS)" bash ci/in-cluster/run.sh

.PHONY: in-cluster-job
in-cluster-job: ## e2e of the in-cluster Job (ci/in-cluster) on a fresh 1-node local cluster: a run that cannot start fails the Job, the core profile passes, report copied out; not in make test (about 7.5 min)
	DRA_E2E_IN_CLUSTER_JOB=1 $(PY) -m pytest tests/e2e/test_incluster_job.py -v -s $(PYTEST_ARGS)

.PHONY: install-driver
install-driver: ## local cluster + DRIVER from its Helm chart, left running for `run --cluster existing` (README)
	$(VENV)/bin/dra-conformance install --driver $(DRIVER) --driver-deploy helm --nodes $(NODES) \
	    --feature-gates $(FEATURE_GATES) $(K8S_FLAG)

.PHONY: profile-manifest
profile-manifest: ## regenerate suites/profile-tests.json (each profile's test IDs; a unit test checks it like a lockfile)
	$(PY) -m conformance.reporting.manifest --write

.PHONY: soak multi-cluster
SOAK_FRESH ?=
soak: ## the main job N times (default 10, PROFILE default core here) on one local cluster, SOAK_FRESH=1: a fresh one each run; verdicts, apiserver/kubelet/containerd memory and fds, objects, host state; not in make test
	$(VENV)/bin/dra-conformance soak --runs $(or $(N),10) --profile $(if $(filter command line,$(origin PROFILE)),$(PROFILE),core) \
	  --driver $(DRIVER) $(if $(SOAK_FRESH),--fresh) $(if $(RUN_ARGS),-- $(RUN_ARGS))

multi-cluster: ## N (default 3) local clusters side by side, the core profile (PROFILE=) on each at once (MULTI_ARGS=--serial), then the host-state diff; not in make test
	$(VENV)/bin/dra-conformance multi-cluster --clusters $(or $(N),3) --profile $(if $(filter command line,$(origin PROFILE)),$(PROFILE),core) \
	  --driver $(DRIVER) $(MULTI_ARGS) $(if $(RUN_ARGS),-- $(RUN_ARGS))

.PHONY: ci-templates
ci-templates: ## run ci/'s templates with real runners here (not in make test, about 10 min): actionlint; act (GitHub, cell + merge jobs on the host) and gitlab-ci-local (shell executor), core profile, one local cluster each; K8S_VERSION= picks the cell's release (default 1.34; ci/README.md)
	$(PY) -m conformance_tools.ci_runners $(K8S_FLAG)

.PHONY: feature-combinations
feature-combinations: ## the full profile on each feature-combination profile (device status + binding conditions; partitions + taints + health; consumable capacity + admin access, on >= 1.35: the 1.34 scheduler panics on it), one local cluster after another; prints profile x verdict x passed/failed/skipped x time (reports/feature-combinations/combinations.md); not in make test
	$(VENV)/bin/dra-conformance feature-combinations --feature-gates $(FEATURE_GATES) $(K8S_FLAG) $(if $(COMBINATIONS),--only $(COMBINATIONS))

.PHONY: kind-rehearsal
kind-rehearsal: ## the registry rehearsal on kind: nodes pull only through the loopback registry (nothing loaded), reference driver helm-installed from the OCI chart, `run --cluster existing --image-registry` core; not in make test (about 6-8 min)
	DRA_E2E_KIND_REHEARSAL=1 $(PY) -m pytest tests/e2e/test_kind_rehearsal.py -v -s -p no:cacheprovider $(PYTEST_ARGS)

.PHONY: rbac-minimal
rbac-minimal: ## issue 27 §4: the standard profile on an installed reference driver (own 2-node local cluster) as a user bound only to `preflight --print-role`'s ClusterRole, then as cluster-admin (DRA_E2E_RBAC_KUBECONFIG=K: an `install`ed cluster, kept); prints both counts and each test that differs (must be a skip naming the permission); not in make test (two standard runs)
	DRA_E2E_RBAC_MINIMAL=1 $(PY) -m pytest tests/e2e/test_rbac_minimal.py -v -s -p no:cacheprovider $(PYTEST_ARGS)
