"""`dra-conformance images`: list names every image a run needs and whether it is cached; export writes
archives an air-gapped machine can check; import refuses what does not match the export's index."""

import json

import pytest
from conformance_lab.toolchain.images import catalog, oci, store

from conformance.cli import main


@pytest.fixture
def tiny_catalog(tmp_path, monkeypatch):
    """The real catalog's names with tiny images (no Go, apt or pip needed)."""
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path / "cache"))

    def spec(name):
        ref = f"example.local/{name}:1"

        def build():
            return store.cached_archive(name, "k", lambda t: oci.write_oci_archive(t, ref, [], ["/x"]))

        return catalog.ImageSpec(
            name, f"{name} pods", f"{name} source", lambda: ref, build, lambda: store.lookup(name, "k")
        )

    names = ["pause", "busybox", "dra-example-driver", "reference-driver"]
    monkeypatch.setattr(catalog, "specs", lambda local_images=None: [spec(n) for n in names])
    return names


def test_catalog_names_every_image_a_run_needs():
    names = [s.name for s in catalog.select([])]
    assert names == ["pause", "busybox", "dra-example-driver", "dra-example-driver-previous", "reference-driver"]
    history = [f"dra-example-driver-{v}" for v in ("v0.1.0", "v0.2.0", "v0.2.1")]  # make example-driver-history
    optional = [*history, "dra-driver-cpu", "suite"]
    assert [s.name for s in catalog.specs() if s.optional] == optional  # built only when named
    assert catalog.DEFAULT_IMAGES == {
        "pause": "dra-conformance.local/pause:1",
        "busybox": "dra-conformance.local/busybox:1",
    }


def test_list_says_what_is_cached(tiny_catalog, capsys):
    assert main(["images", "build", "busybox"]) == 0
    capsys.readouterr()
    assert main(["images", "cache", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert list(rows) == tiny_catalog
    assert rows["busybox"]["cached"] and rows["busybox"]["ref"] == "example.local/busybox:1"
    assert not rows["pause"]["cached"] and "images build pause" in rows["pause"]["note"]
    assert main(["images", "cache"]) == 0
    assert "NOT cached" in capsys.readouterr().out


def test_unknown_image_name_is_bad_input(tiny_catalog, capsys):
    assert main(["images", "build", "nginx"]) == 4
    assert "unknown image ['nginx']; known: pause, busybox" in capsys.readouterr().err


def test_export_then_load_checks_every_archive(tiny_catalog, tmp_path, capsys):
    dest = tmp_path / "export"
    assert main(["images", "export", "--to", str(dest), "pause", "reference-driver"]) == 0
    index = json.loads((dest / catalog.INDEX).read_text())
    assert [r["name"] for r in index] == ["pause", "reference-driver"]
    loaded = catalog.load_dir(dest)
    assert [(n, ref) for n, ref, _ in loaded] == [
        ("pause", "example.local/pause:1"),
        ("reference-driver", "example.local/reference-driver:1"),
    ]
    (dest / "pause.oci.tar").write_bytes((dest / "pause.oci.tar").read_bytes()[:-10])
    with pytest.raises(oci.ImageError, match="does not match the sha256"):
        catalog.load_dir(dest, ["pause"])


def test_import_refuses_a_directory_that_is_not_an_export(tiny_catalog, tmp_path, capsys):
    assert main(["images", "import", "--from", str(tmp_path / "nope")]) == 4
    (tmp_path / "empty").mkdir()
    assert (
        main(["images", "import", "--from", str(tmp_path / "empty"), "--socket", "/x.sock", "--ctr", "/bin/true"]) == 1
    )
    assert "has no images.json" in capsys.readouterr().err
