"""Offline OCI images: the archive layout is self-consistent (digests, diff_ids) and the busybox and
pause images carry what pods need. Source: OCI image-layout spec v1.1."""

import hashlib
import io
import json
import tarfile

import pytest
from conformance_lab.toolchain.images import base as images
from conformance_lab.toolchain.images import oci


def _blobs(path):
    with tarfile.open(path) as tf:
        return {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}


def test_oci_archive_digests_and_ref_annotation(tmp_path):
    out = tmp_path / "img.tar"
    digest = oci.write_oci_archive(out, "example.local/x:1", [("hello", "file", b"hi", 0o644)], ["/hello"])
    files = _blobs(out)
    index = json.loads(files["index.json"])
    entry = index["manifests"][0]
    assert entry["digest"] == digest
    assert entry["annotations"]["io.containerd.image.name"] == "example.local/x:1"
    manifest = json.loads(files["blobs/sha256/" + digest.split(":")[1]])
    for blob in [manifest["config"], *manifest["layers"]]:
        data = files["blobs/sha256/" + blob["digest"].split(":")[1]]
        assert "sha256:" + hashlib.sha256(data).hexdigest() == blob["digest"]
        assert len(data) == blob["size"]
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    assert config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]
    assert config["config"]["Entrypoint"] == ["/hello"]


def test_busybox_image_has_applet_links_and_sh(tmp_path, monkeypatch):
    try:
        images.find_busybox()
    except oci.ImageError as exc:
        pytest.fail(f"{exc}")
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path))
    files = _blobs(images.busybox_archive("example.local/busybox:1"))
    manifest = json.loads(files["blobs/sha256/" + json.loads(files["index.json"])["manifests"][0]["digest"][7:]])
    layer = files["blobs/sha256/" + manifest["layers"][0]["digest"][7:]]
    with tarfile.open(fileobj=io.BytesIO(layer)) as lt:
        members = {m.name: m for m in lt.getmembers()}
    assert members["bin/busybox"].isfile() and members["bin/busybox"].mode == 0o755
    assert members["bin/sh"].issym() and members["bin/sh"].linkname == "busybox"
    assert members["bin/wget"].issym()
    assert members["tmp"].mode == 0o1777


def test_pause_program_builds_static_and_answers_version(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path))
    binary = images.build_pause()
    assert subprocess.run([str(binary), "-v"], capture_output=True, text=True).stdout.startswith(
        "dra-conformance-pause"
    )
    assert b"ld-linux" not in binary.read_bytes()[:4096]


def test_setup_builds_the_images_last_unless_skipped(monkeypatch, tmp_path):
    from conformance_lab.toolchain import setup

    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path))
    names = [s.name for s in setup.setup_steps(None, {"debian", "npm"})]
    assert names[-1] == "offline images (pause, busybox)"  # `make setup`: what the main job needs
    names = [s.name for s in setup.setup_steps(None, {"debian", "npm", "kind"}, scope="all")]
    assert "offline images (every catalog image)" in names
    assert not any("offline images" in s.name for s in setup.setup_steps(None, {"debian", "npm", "images"}))
