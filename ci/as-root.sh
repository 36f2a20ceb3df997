#!/bin/sh
# Run a command as root: directly when the CI job already is root (a container, a root runner), else through
# passwordless sudo keeping the job's environment and PATH (hosted runners: the local cluster needs root).
# Usage: ci/as-root.sh make setup ...
if [ "$(id -u)" = 0 ]; then exec "$@"; fi
exec sudo -E env "PATH=$PATH" HOME="$HOME" "$@"
