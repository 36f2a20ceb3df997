# syntax=docker/dockerfile:1
# The dra-conformance suite image, for users who build with Docker (from the internet). The same image is built
# offline, without Docker, by `dra-conformance images build suite` (lab/conformance_lab/toolchain/images/suite_image.py:
# Debian .debs, wheels, our cached kubectl/helm/kind, the Allure CLI). Build from the repository root:
#   docker build -t dra-conformance.local/suite:dev .
# Run it against a kubeconfig (the entrypoint is `dra-conformance run`; reports under /reports/run):
#   docker run --rm --network host -v ~/.kube/config:/kube/config:ro -v "$PWD/reports:/reports" \
#     dra-conformance.local/suite:dev --cluster existing --kubeconfig /kube/config \
#     --driver-deploy preinstalled --profile core --node-access privileged-pod --report-dir /reports/run
# or as a pod on the cluster it qualifies (in-cluster mode): ci/in-cluster/ and `make conformance-in-cluster`.
# The pins below are lab/conformance_lab/versions.toml's (tests/harness/test_ci_templates.py checks that they agree).
ARG PYTHON_VERSION=3.11
ARG NODE_VERSION=22

# helm and kind built by our own toolchain code (same ldflags and cache layout as `make setup`)
FROM golang:1.26-bookworm AS tools
RUN apt-get update && apt-get install -y --no-install-recommends python3 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY lab/conformance_lab lab/conformance_lab
COPY conformance conformance
ENV DRA_CONFORMANCE_CACHE=/opt/dra-conformance/cache PYTHONPATH=/src:/src/lab
RUN python3 -c "import pathlib; from conformance_lab.toolchain import gobuild, versions; \
[gobuild.build_tool(versions.load().go_tools[n], pathlib.Path('/tmp/build.log')) for n in ('helm', 'kind')]"
# kubectl of the default Kubernetes release (the lab's versions.toml [kubernetes]), checked against its published sha256,
# put where the harness looks for it (the cache entry with its MANIFEST.json)
ARG K8S_TAG=v1.34.4
RUN set -eu; d=$DRA_CONFORMANCE_CACHE/k8s/$K8S_TAG/bin; mkdir -p $d; cd $d; \
    curl -fsSLO https://dl.k8s.io/release/$K8S_TAG/bin/linux/amd64/kubectl; \
    echo "$(curl -fsSL https://dl.k8s.io/release/$K8S_TAG/bin/linux/amd64/kubectl.sha256)  kubectl" | sha256sum -c; \
    chmod 755 kubectl; \
    printf '{"files": {"kubectl": %s}, "source": "dl.k8s.io"}' "$(stat -c %s kubectl)" > ../MANIFEST.json

# the Allure 3 CLI, exactly as conformance/reporting/allure/package-lock.json pins it
FROM node:${NODE_VERSION}-bookworm-slim AS allure
WORKDIR /opt/allure
COPY conformance/reporting/allure/package.json conformance/reporting/allure/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM python:${PYTHON_VERSION}-slim-bookworm
# Debian's nodejs runs the Allure CLI (the offline image uses the same package)
RUN apt-get update && apt-get install -y --no-install-recommends nodejs tar && rm -rf /var/lib/apt/lists/*
ENV DRA_CONFORMANCE_CACHE=/opt/dra-conformance/cache \
    DRA_CONFORMANCE_ALLURE=/opt/allure/node_modules/.bin/allure \
    PYTHONUNBUFFERED=1
COPY --from=tools /opt/dra-conformance/cache /opt/dra-conformance/cache
COPY --from=allure /opt/allure/node_modules /opt/allure/node_modules
RUN for b in $DRA_CONFORMANCE_CACHE/tools/*/bin/* $DRA_CONFORMANCE_CACHE/k8s/*/bin/*; do ln -s "$b" /usr/local/bin/; done
WORKDIR /src
COPY pyproject.toml build_hooks.py README.md ./
COPY lab/conformance_lab/versions.toml lab/conformance_lab/versions.toml
COPY conformance conformance
COPY reference_driver reference_driver
COPY suites suites
COPY fixtures/drivers fixtures/drivers
# the plugin as a user installs it (a wheel: suites, profiles and gRPC stubs inside), at the pinned dependencies
# `make venv` uses (the lab's versions.toml [python] as pip constraints); reports go to the working directory
RUN python -c "import tomllib; print(''.join(f'{k}=={v}\n' for k, v in tomllib.load(open('lab/conformance_lab/versions.toml','rb'))['python'].items()))" > /tmp/constraints.txt \
    && pip install --no-cache-dir -c /tmp/constraints.txt . && rm -rf /src
WORKDIR /reports
ENTRYPOINT ["dra-conformance", "run"]
CMD ["--cluster", "existing", "--profile", "core"]
