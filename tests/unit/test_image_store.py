"""The image cache: keys follow the inputs; an entry is trusted only when complete and verified; a failed
build leaves nothing behind."""

import pytest
from conformance_lab.toolchain.images import oci, store


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DRA_CONFORMANCE_CACHE", str(tmp_path / "cache"))


def _writer(calls):
    def build(tmp):
        calls.append(tmp)
        oci.write_oci_archive(tmp, "example.local/x:1", [("f", "file", b"x", 0o644)], ["/f"])

    return build


def test_cache_key_changes_with_every_input():
    assert store.cache_key("a", [1, 2]) == store.cache_key("a", [1, 2])
    assert len({store.cache_key("a", [1, 2]), store.cache_key("a", [2, 1]), store.cache_key("a", b"[1, 2]")}) == 3
    assert store.cache_key("ab", "c") != store.cache_key("a", "bc"), "parts are length-prefixed"


def test_archive_is_built_once_then_reused():
    calls = []
    first = store.cached_archive("demo", "k1", _writer(calls))
    again = store.cached_archive("demo", "k1", _writer(calls))
    assert first == again == store.archive_path("demo", "k1") and len(calls) == 1
    assert calls[0].name.startswith(first.name + ".partial-"), "built under a temporary name"


def test_a_half_written_archive_is_deleted_and_rebuilt():
    calls = []
    path = store.cached_archive("demo", "k2", _writer(calls))
    path.write_bytes(path.read_bytes()[:1000])
    assert store.lookup("demo", "k2") is None and not path.exists()
    store.cached_archive("demo", "k2", _writer(calls))
    assert len(calls) == 2 and oci.verify_archive(path).ref == "example.local/x:1"


def test_a_failed_or_unverifiable_build_leaves_nothing():
    def broken(tmp):
        tmp.write_bytes(b"not a tar")

    with pytest.raises(oci.ImageError):
        store.cached_archive("demo", "k3", broken)
    assert list(store.images_dir().glob("demo-*")) == []


def test_layer_is_trusted_only_while_its_content_matches_its_name():
    layer = store.cached_layer("base", "k4", lambda tmp: tmp.write_bytes(b"layer-1"))
    assert layer.name.startswith("base-k4.") and store.find_layer("base", "k4") == layer
    layer.write_bytes(b"tampered")
    assert store.find_layer("base", "k4") is None and not layer.exists()


def test_a_new_key_replaces_the_older_entry_of_the_same_name():
    old = store.cached_archive("demo", "a" * 12, _writer([]))
    other = store.cached_archive("demo-extra", "c" * 12, _writer([]))
    new = store.cached_archive("demo", "b" * 12, _writer([]))
    assert new.exists() and other.exists() and not old.exists()
