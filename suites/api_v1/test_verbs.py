"""The full resource.k8s.io/v1 verb set for every DRA kind: create, get, list (label selector), watch, update,
patch (json, merge, strategic, apply), delete and deletecollection. Under xdist they run beside any other test:
their cluster-scoped objects name a per-test driver (slices, taint rules) or select no device (classes), so no
allocation, slice read or taint of another test sees them (DeviceTaintRule tests still run in the cluster-state
group: every test needing ``api.devicetaintrules`` does).

Sources: upstream test/e2e/dra/dra.go "CRUD Tests resource.k8s.io/v1 DeviceClass|ResourceClaim|
ResourceClaimTemplate|ResourceSlice [Conformance]" (v1.35) and "... DeviceTaintRule" (v1.37); KEP-4381.
"""

import pytest

from conformance.api import KINDS, PATCH_TYPES, NotFound, api_verbs, label_patch

pytestmark = [
    pytest.mark.api_v1,
    pytest.mark.standard,
    pytest.mark.kep(4381),
    pytest.mark.scenario("API-01", "API-02", "API-03", "API-04", "API-05"),
]

MARK = "dra-conformance.test/verb"


def _kinds():
    return [
        pytest.param(k, id=k.name, marks=[pytest.mark.requires(k.capability)] if k.capability else []) for k in KINDS
    ]


def _version(obj) -> str:
    """The API version an object was built for (DeviceTaintRule is not v1 before 1.37)."""
    return obj.api_version.rsplit("/", 1)[-1]


def _selector(builder) -> str:
    return ",".join(f"{k}={v}" for k, v in builder.labels().items())


@pytest.mark.parametrize("kind", _kinds())
def test_created_object_can_be_read_and_listed(k8s, tracker, builder, kind):
    """An object created through v1 is returned by get and by a list filtered on its labels.
    Source: upstream CRUD conformance tests (create/get/list)."""
    # given: a minimal object of the kind
    created = tracker.create(kind.build(builder))
    # when: it is read back and listed by label
    got = k8s.get(kind.name, created.name, created.namespace or None, _version(created))
    listed = k8s.list(
        kind.name, created.namespace or None, label_selector=_selector(builder), version=_version(created)
    )
    # then: same object, same spec
    assert (got.uid, got.get("spec")) == (created.uid, created.get("spec")), got.describe()
    assert [o.uid for o in listed] == [created.uid], [o.ref for o in listed]


@pytest.mark.parametrize("kind", _kinds())
def test_update_changes_labels(k8s, tracker, builder, kind):
    """A PUT with a changed label is stored and bumps the resourceVersion.
    Source: upstream CRUD conformance tests (update; claim/template specs are immutable, so labels change)."""
    # given: an object
    created = tracker.create(kind.build(builder))
    # when: it is replaced with one more label
    updated = api_verbs.replace_relabelled(k8s, created, MARK, "update")
    # then: the label is stored and the version moved
    assert k8s.get(kind.name, created.name, created.namespace or None, _version(created)).labels.get(MARK) == "update"
    assert updated.resource_version != created.resource_version, updated.describe()


@pytest.mark.parametrize("patch_type", PATCH_TYPES)
@pytest.mark.parametrize("kind", _kinds())
def test_every_patch_type_changes_labels(k8s, tracker, builder, kind, patch_type):
    """json, merge, strategic-merge and server-side-apply patches each set a label.
    Source: upstream CRUD conformance tests (all four patch types)."""
    # given: an object
    created = tracker.create(kind.build(builder))
    # when: a label is patched with this patch type
    patched = api_verbs.patch(k8s, created, patch_type, label_patch(created, patch_type, MARK, patch_type))
    # then: the label is stored, the spec untouched
    assert patched.labels.get(MARK) == patch_type, patched.describe()
    stored = k8s.get(kind.name, created.name, created.namespace or None, _version(created))
    assert stored.get("spec") == created.get("spec"), stored.describe()


@pytest.mark.parametrize("kind", _kinds())
def test_watch_reports_added_modified_deleted(k8s, tracker, builder, kind):
    """A watch started before the changes reports ADDED, MODIFIED and DELETED for the object.
    Source: upstream CRUD conformance tests (watch)."""
    # given: the current resourceVersion of the kind
    obj = kind.build(builder)
    _, version = k8s.list_with_version(
        kind.name, obj.namespace or None, label_selector=_selector(builder), version=_version(obj)
    )

    # when: the object is created, relabelled and deleted
    def change():
        created = tracker.create(obj)
        api_verbs.replace_relabelled(k8s, created, MARK, "watch")
        k8s.delete(kind.name, created.name, created.namespace or None, version=_version(created))

    seen = api_verbs.watch_types(
        k8s,
        kind.name,
        obj.namespace or None,
        label_selector=_selector(builder),
        resource_version=version,
        action=change,
        want=("ADDED", "MODIFIED", "DELETED"),
        version=_version(obj),
    )
    # then: the three event types arrived in order for it
    types = [t for t, name in seen if name == obj.name]
    assert types[:1] == ["ADDED"] and "MODIFIED" in types and types[-1:] == ["DELETED"], seen


@pytest.mark.parametrize("kind", _kinds())
def test_delete_and_deletecollection_remove_objects(k8s, tracker, builder, kind):
    """delete removes one object; deletecollection with the test's label selector removes the rest.
    Source: upstream CRUD conformance tests (delete, deletecollection)."""
    # given: three objects of the kind
    objs = [tracker.create(kind.build(builder)) for _ in range(3)]
    ns = objs[0].namespace or None
    # when: one is deleted, then the collection by label
    k8s.delete(kind.name, objs[0].name, ns, version=_version(objs[0]))
    api_verbs.delete_collection(k8s, kind.name, ns, _selector(builder), version=_version(objs[0]))
    # then: none is left (objects with finalizers may linger briefly only while terminating)
    left = [
        o
        for o in k8s.list(kind.name, ns, label_selector=_selector(builder), version=_version(objs[0]))
        if not o.get("metadata.deletionTimestamp")
    ]
    assert left == [], [o.ref for o in left]
    with pytest.raises(NotFound):
        k8s.get(kind.name, objs[0].name, ns, _version(objs[0]))
