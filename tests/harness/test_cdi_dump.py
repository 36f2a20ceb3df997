"""Reading a node's CDI spec files while other claims are prepared and unprepared (device shards let tests on
other shards do that at the same moment): a file gone between the listing and its read is left out, never an
error. The script runs under a real ``sh``."""

import subprocess
from pathlib import Path

from conformance.node import cdi


def _run(script: str) -> str:
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    return proc.stdout


def test_dump_reads_every_spec_of_both_directories_and_skips_other_files(tmp_path: Path):
    run, etc = tmp_path / "run", tmp_path / "etc"
    run.mkdir(), etc.mkdir()
    (run / "drv_claim-1.json").write_text('{"kind": "x/y"}\n')
    (etc / "vendor.yaml").write_text("kind: a/b\n")
    (etc / "notes.txt").write_text("not a spec")
    specs = cdi.parse_dump(_run(cdi.dump_script([str(run), str(etc)])))
    assert specs == {"drv_claim-1.json": '{"kind": "x/y"}', "vendor.yaml": "kind: a/b"}


def test_a_spec_removed_between_listing_and_read_is_left_out(tmp_path: Path):
    # a dangling link is what a removed file looks like to the read: listed by the glob, unreadable by cat
    (tmp_path / "gone_claim-2.json").symlink_to(tmp_path / "removed.json")
    (tmp_path / "kept_claim-3.json").write_text("{}")
    specs = cdi.parse_dump(_run(cdi.dump_script([str(tmp_path)])))
    assert specs == {"kept_claim-3.json": "{}"}


def test_missing_directories_give_no_specs_and_no_error(tmp_path: Path):
    assert cdi.parse_dump(_run(cdi.dump_script([str(tmp_path / "none")]))) == {}
