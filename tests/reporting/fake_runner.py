"""Stand-in for ``dra-conformance run`` in the matrix tests (no cluster): writes the run.json the harness
would write for ``--k8s-version``, runs the sample suite with ``--report-dir`` and generates the report.
``--fail-versions`` lists the versions where the sample's failing tests fail."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from conformance.reporting import build
from tests.reporting.conftest import REPO, SAMPLE, sample_run_json

parser = argparse.ArgumentParser()
parser.add_argument("--k8s-version", required=True)
parser.add_argument("--report-dir", required=True)
parser.add_argument("--fail-versions", nargs="*", default=[])
args = parser.parse_args()
os.makedirs(args.report_dir, exist_ok=True)
run = sample_run_json(
    cluster={"k8s_version": f"v{args.k8s_version}.2"}, declared_capabilities=[], run_id=f"cell-{args.k8s_version}"
)
with open(os.path.join(args.report_dir, "run.json"), "w") as fh:
    json.dump(run, fh)
env = {**os.environ, "SAMPLE_FAIL": "1" if args.k8s_version in args.fail_versions else "0"}
code = subprocess.run(
    [
        sys.executable,
        "-m",
        "pytest",
        str(SAMPLE),
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(REPO),
        "--report-dir",
        args.report_dir,
    ],
    env=env,
    timeout=120,
).returncode
verdict = build.generate(args.report_dir, html_report=False)
sys.exit(code or verdict.exit_code)
