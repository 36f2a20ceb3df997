"""The work of the local stand-ins for the GitHub actions the workflow `uses:` when act runs it on this host
(`make ci-templates`, tools/conformance_tools/ci_runners.py; ``$DRA_CI_STANDINS`` is this folder). Artifacts and
caches live under ``$DRA_CI_STANDIN_STORE`` (``artifacts/<name>/``, ``cache/<key>/``) so that one job's upload
is the next job's download, as on GitHub. Inputs come as ``INPUT_*`` variables set by each stand-in's action.yml.

Usage: python3 standin.py {upload,download,restore,save,junit,tool}
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def _store(kind: str) -> Path:
    root = os.environ.get("DRA_CI_STANDIN_STORE")
    if not root:
        sys.exit("DRA_CI_STANDIN_STORE is not set; run the workflow through `make ci-templates`")
    return Path(root) / kind


def _paths(text: str) -> list[Path]:
    return [Path(os.path.expanduser(p.strip())) for p in text.splitlines() if p.strip()]


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        shutil.copyfile(src, dst)


def upload() -> None:
    """actions/upload-artifact: the paths, relative to their common folder, into artifacts/<name>/."""
    name, paths = os.environ["INPUT_NAME"], _paths(os.environ["INPUT_PATH"])
    found = [p for p in paths if p.exists()]
    if not found and os.environ.get("INPUT_IF-NO-FILES-FOUND", "warn") == "error":
        sys.exit(f"upload-artifact {name}: none of {[str(p) for p in paths]} exists")
    root = Path(os.path.commonpath([str(p.resolve()) for p in found])) if found else Path.cwd()
    root = root.parent if len(found) == 1 and found[0].is_file() else root
    target = _store("artifacts") / name
    shutil.rmtree(target, ignore_errors=True)
    for p in found:
        _copy(p.resolve(), target / p.resolve().relative_to(root))
    print(f"upload-artifact {name}: {len(found)} of {len(paths)} paths -> {target}")


def download() -> None:
    """actions/download-artifact: every artifact matching the pattern into <path>/<name>/."""
    pattern, dest = os.environ.get("INPUT_PATTERN") or os.environ["INPUT_NAME"], Path(os.environ["INPUT_PATH"])
    hits = sorted(glob.glob(str(_store("artifacts") / pattern)))
    for hit in hits:
        _copy(Path(hit), dest / Path(hit).name)
    print(f"download-artifact {pattern}: {[Path(h).name for h in hits]} -> {dest}")


def restore() -> None:
    """actions/cache/restore: the exact key, else the newest entry whose key starts with a restore key."""
    key, prefixes = os.environ["INPUT_KEY"], _paths(os.environ.get("INPUT_RESTORE-KEYS", ""))
    entries = sorted(_store("cache").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True)
    hit = next((e for e in entries if e.name == key), None) or next(
        (e for e in entries for p in prefixes if e.name.startswith(str(p))), None
    )
    for path in _paths(os.environ["INPUT_PATH"]):
        if hit is not None and (hit / path.name).exists():
            _copy(hit / path.name, path)
    print(f"cache restore {key}: {hit.name if hit else 'miss'}")


def save() -> None:
    """actions/cache/save: the paths into cache/<key>/ (by their last path component)."""
    target = _store("cache") / os.environ["INPUT_KEY"]
    for path in _paths(os.environ["INPUT_PATH"]):
        if path.exists():
            _copy(path, target / path.name)
    print(f"cache save -> {target}")


def junit() -> None:
    """mikepenz/action-junit-report: parse the report; with require_tests, fail when it has no test case."""
    files = [f for p in _paths(os.environ["INPUT_REPORT_PATHS"]) for f in glob.glob(str(p))]
    cases = sum(len(ET.parse(f).getroot().findall(".//testcase")) for f in files)
    print(f"junit report: {files}: {cases} test cases")
    if os.environ.get("INPUT_REQUIRE_TESTS") == "true" and cases == 0:
        sys.exit("junit report: no test case found")


def tool() -> None:
    """actions/setup-*: the host's tool must exist; print its version (nothing is installed)."""
    cmd = os.environ["STANDIN_TOOL"].split()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    print(f"{cmd[0]} from the host: {(out.stdout or out.stderr).strip()} (wanted {os.environ.get('STANDIN_WANT')})")


if __name__ == "__main__":
    {"upload": upload, "download": download, "restore": restore, "save": save, "junit": junit, "tool": tool}[
        sys.argv[1]
    ]()
