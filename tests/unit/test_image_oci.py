"""OCI archive shape and trust: multi-layer manifests whose diff_ids are the layer digests, reproducible
layers from a directory tree, and a verifier that refuses a corrupted or half-written archive.
Source: OCI image-spec v1.1 (manifest, config rootfs.diff_ids), image-layout v1.1 (index.json, blobs)."""

import hashlib
import json
import os
import tarfile

import pytest
from conformance_lab.toolchain.images import oci


def _files(path):
    with tarfile.open(path) as tf:
        return {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}


def _tree(tmp_path):
    root = tmp_path / "root"
    (root / "usr/bin").mkdir(parents=True)
    (root / "usr/bin/tool").write_bytes(b"#!tool")
    os.chmod(root / "usr/bin/tool", 0o755)
    os.link(root / "usr/bin/tool", root / "usr/bin/tool2")
    (root / "usr/bin/link").symlink_to("tool")
    (root / "usr/bin/__pycache__").mkdir()
    (root / "usr/bin/__pycache__/x.pyc").write_bytes(b"junk")
    return root


def test_multi_layer_image_manifest_config_and_index(tmp_path):
    # given: two layers and a runtime config
    l1 = oci.entries_layer(tmp_path / "l1.tar", [("a", "file", b"1", 0o644)])
    l2 = oci.tree_layer(tmp_path / "l2.tar", _tree(tmp_path), prefix="opt/app")
    config = oci.ImageConfig(entrypoint=("python", "-m", "x"), env=("A=1",), workdir="/app", labels=(("k", "v"),))
    # when: the archive is written
    digest = oci.write_image(tmp_path / "img.tar", "example.local/app:1", [l1, l2], config)
    # then: index -> manifest -> config/layers resolve, diff_ids are the uncompressed layer digests
    files = _files(tmp_path / "img.tar")
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    entry = json.loads(files["index.json"])["manifests"][0]
    assert entry["digest"] == digest and entry["annotations"][oci.NAME_ANNOTATION] == "example.local/app:1"
    manifest = json.loads(files["blobs/sha256/" + digest[7:]])
    assert manifest["mediaType"] == oci.MANIFEST_TYPE and manifest["schemaVersion"] == 2
    assert [m["mediaType"] for m in manifest["layers"]] == [oci.LAYER_TYPE] * 2
    cfg = json.loads(files["blobs/sha256/" + manifest["config"]["digest"][7:]])
    assert cfg["rootfs"]["diff_ids"] == [m["digest"] for m in manifest["layers"]]
    for blob in manifest["layers"]:
        data = files["blobs/sha256/" + blob["digest"][7:]]
        assert hashlib.sha256(data).hexdigest() == blob["digest"][7:] and len(data) == blob["size"]
    assert cfg["config"] == {
        "Entrypoint": ["python", "-m", "x"], "Cmd": [], "Env": ["A=1"], "WorkingDir": "/app", "Labels": {"k": "v"}
    }  # fmt: skip
    assert oci.verify_archive(tmp_path / "img.tar").layers == tuple(m["digest"] for m in manifest["layers"])


def test_tree_layer_is_reproducible_and_keeps_links(tmp_path):
    root = _tree(tmp_path)
    a, b = (
        oci.tree_layer(tmp_path / "a.tar", root, prefix="opt/app"),
        oci.tree_layer(tmp_path / "b.tar", root, "opt/app"),
    )
    assert a.read_bytes() == b.read_bytes(), "same tree, same layer bytes"
    with tarfile.open(a) as lt:
        members = {m.name: m for m in lt.getmembers()}
    assert list(members)[:2] == ["opt", "opt/app"], "parent directories of the prefix come first"
    assert members["opt/app/usr/bin/tool"].mode == 0o755
    assert members["opt/app/usr/bin/tool2"].islnk() and members["opt/app/usr/bin/tool2"].linkname.endswith("tool")
    assert members["opt/app/usr/bin/link"].issym()
    assert not any("__pycache__" in n for n in members)
    assert {(m.mtime, m.uid, m.gid, m.uname) for m in members.values()} == {(0, 0, 0, "")}


def test_verify_refuses_a_corrupted_or_truncated_archive(tmp_path):
    out = tmp_path / "img.tar"
    oci.write_oci_archive(out, "example.local/x:1", [("f", "file", b"A" * 4096, 0o644)], ["/f"])
    data = out.read_bytes()
    bad = tmp_path / "bad.tar"
    bad.write_bytes(data.replace(b"A" * 4096, b"B" * 4096))
    with pytest.raises(oci.ImageError, match="does not match its digest"):
        oci.verify_archive(bad)
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(oci.ImageError, match="bad.tar"):
        oci.verify_archive(bad)
