#!/usr/bin/env bash
# Create .venv and install dra-conformance, its lab and its tools (all editable) with pinned Python dependencies.
# Idempotent: skipped when the pyproject.toml files and the lab's versions.toml are unchanged since the last install.
set -euo pipefail
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
SECONDS=0
stamp="$VENV/.dra-conformance-stamp"
PINS=lab/conformance_lab/versions.toml
want=$(cat pyproject.toml lab/pyproject.toml tools/pyproject.toml "$PINS" | sha256sum | cut -d' ' -f1)
step() { printf '[venv] %s\n' "$*"; }
fail() { printf 'error: setup step "python venv" failed: %s\n  fix: %s\n' "$1" "$2" >&2; exit 2; }

command -v "$PYTHON" >/dev/null || fail "$PYTHON not found" "install Python >= 3.11 or set PYTHON=/path/to/python3"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || fail "$($PYTHON --version) is too old" "use Python >= 3.11 (PYTHON=...)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$VENV/bin/python" -c 'import conformance, conformance_lab, conformance_tools, pytest, grpc_tools' 2>/dev/null; then
  printf '[venv] up to date (%d s)\n' "$SECONDS"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  step "creating $VENV"
  "$PYTHON" -m venv "$VENV" || fail "python -m venv failed" "install the venv module (apt-get install python3-venv)"
fi
constraints="$VENV/constraints.txt"
"$VENV/bin/python" - "$constraints" "$PINS" <<'PY'
import sys, tomllib
pins = tomllib.load(open(sys.argv[2], "rb"))["python"]
open(sys.argv[1], "w").write("".join(f"{k}=={v}\n" for k, v in pins.items()))
PY
step "installing dra-conformance, its lab and tools (editable) + pinned dependencies"
log="$VENV/pip-install.log"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel >"$log" 2>&1 \
  || { tail -20 "$log" >&2; fail "pip could not upgrade itself" "check that PyPI is reachable and re-run make setup"; }
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -c "$constraints" -e '.[dev]' -e lab -e tools >>"$log" 2>&1 \
  || { tail -20 "$log" >&2; fail "pip install -e .[dev] -e lab -e tools failed (full log: $log)" "check that PyPI is reachable (or the pins in $PINS [python]) and re-run make setup"; }
echo "$want" > "$stamp"
printf '[venv] ready (%d s)\n' "$SECONDS"
