"""CDI specs on a node: the spec files a driver wrote for a claim and the device IDs the node defines.

Sources: CDI spec format (``cdiVersion``, ``kind``, ``devices[].name``; fully-qualified ID ``<kind>=<name>``,
dra-protocols.md §4); drivers name spec files after the claim UID (dra-example-driver, test/e2e/dra
test-driver, our reference driver), so a claim's specs carry its UID in the name or the text.
"""

from __future__ import annotations

import json
import re

import yaml


def parse(text: str) -> dict:
    """One CDI spec file (JSON or YAML) as a dict ({} when empty)."""
    try:
        return json.loads(text)
    except ValueError:
        return yaml.safe_load(text) or {}


def specs_naming(specs: dict[str, str], uid: str) -> dict[str, str]:
    """The entries of ``specs`` (``{file name: text}``) that belong to the claim with ``uid`` (UID in the file
    name or text); {} for an empty ``uid``."""
    return {name: text for name, text in specs.items() if uid and (uid in name or uid in text)}


def claim_specs(node_access, node: str, claim) -> dict[str, str]:
    """``{file name: text}`` of ``node``'s CDI specs that belong to ``claim`` (see :func:`specs_naming`)."""
    return specs_naming(node_access.cdi_specs(node), claim.uid)


def appeared(before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """The spec files of ``after`` that ``before`` lacks or whose text changed since (both ``{file name: text}``
    of one node): what was written between the two looks, whatever the files are named (a driver need not put
    the claim UID in a file's name or text; breaker finding 1)."""
    return {name: text for name, text in after.items() if before.get(name) != text}


def describe(specs: dict[str, str]) -> list[str]:
    """``"<file> (kind <kind>)"`` for each spec file of ``specs`` (``{file name: text}``), sorted; ``kind ?`` when
    the text is not a CDI spec: the kind names the vendor that wrote the file."""
    return [f"{name} (kind {kind_of(specs[name])})" for name in sorted(specs)]


def left_behind(node_access, node: str, claim) -> str:
    """The assertion message of a check that ``claim``'s CDI specs are gone from ``node`` after its unprepare:
    ``CDI spec(s) [files] of claim ns/name (UID u) left on node N after its unprepare`` (``[]`` when the look
    now finds none). Names the claim's own files only, never the node's others: a fault symptom anchored here
    does not match a precondition that lists the node's specs because the claim's own is missing. Raises what
    ``node_access.cdi_specs`` raises. Source: driver contract §6.4 (NodeUnprepareResources removes the spec)."""
    files = sorted(claim_specs(node_access, node, claim))
    return (
        f"CDI spec(s) {files} of claim {claim.namespace}/{claim.name} (UID {claim.uid}) left on node {node} "
        "after its unprepare"
    )


SPEC_MARK = "\x1e"  # ASCII record separator: between file names and contents in one command's output


def dump_script(directories: list[str] | tuple[str, ...]) -> str:
    """A POSIX ``sh`` script that prints every CDI spec file (``*.json``, ``*.yaml``, ``*.yml``) of
    ``directories`` (shell words: paths, or ``$var``) as ``<SPEC_MARK>name<SPEC_MARK>text``, in one command.
    A file removed between the listing and its read (another claim unprepared at the same moment, which
    tests on other device shards do) is left out, never an error; the script always exits 0. Read its
    output with :func:`parse_dump`."""
    globs = " ".join(f"{d}/*" for d in directories)
    return (
        f"for f in {globs}; do case $f in *.json|*.yaml|*.yml) "
        f'c=$(cat "$f" 2>/dev/null) || continue; printf "{SPEC_MARK}%s{SPEC_MARK}%s" "${{f##*/}}" "$c";; '
        "esac; done; true"
    )


def parse_dump(out: str) -> dict[str, str]:
    """``{file name: text}`` from the output of :func:`dump_script` (a later directory wins a name clash)."""
    parts = out.split(SPEC_MARK)[1:]
    return dict(zip(parts[0::2], parts[1::2], strict=False))


def spec_ids(specs: dict[str, str]) -> set[str]:
    """Every fully-qualified CDI device ID (``<kind>=<device>``) the spec files ``{file name: text}`` define."""
    ids = set()
    for text in specs.values():
        spec = parse(text)
        for dev in spec.get("devices") or []:
            ids.add(f"{spec.get('kind')}={dev.get('name')}")
    return ids


def defined_ids(node_access, node: str) -> set[str]:
    """Every fully-qualified CDI device ID (``<kind>=<device>``) ``node``'s spec files define."""
    return spec_ids(node_access.cdi_specs(node))


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def driver_wide(specs: dict[str, str]) -> dict[str, str]:
    """The entries of ``specs`` that belong to no claim: no UID in the file name or text (e.g.
    dra-example-driver's ``common`` device, injected into every container it prepares)."""
    return {name: text for name, text in specs.items() if not _UUID.search(name) and not _UUID.search(text)}


def claim_bound(specs: dict[str, str], kinds: set[str]) -> dict[str, str]:
    """The entries of ``specs`` of a CDI kind in ``kinds`` that belong to a claim (a UID in the file name or
    text: not :func:`driver_wide`): a driver's prepared state on the node."""
    wide = driver_wide(specs)
    return {name: text for name, text in specs.items() if name not in wide and kind_of(text) in kinds}


def kind_of(text: str) -> str:
    """The ``kind`` of a CDI spec text (``vendor/class``); ``?`` when the text is not a CDI spec."""
    try:
        return parse(text).get("kind") or "?"
    except (ValueError, yaml.YAMLError, AttributeError):
        return "?"


def ids_belong_to(node_access, node: str, claim, ids: set[str]) -> tuple[bool, str]:
    """``(ok, evidence)``: whether CDI device IDs ``ids`` handed out for ``claim`` are its own: at least one is
    defined by the claim's own spec files, and every other one by a driver-wide spec (:func:`driver_wide`),
    never by another claim's spec or by no spec at all. Source: KEP-4381 NodePrepareResources
    ``Device.cdi_device_ids``; CDI spec ``<kind>=<name>`` (dra-protocols.md §4)."""
    specs = node_access.cdi_specs(node)
    own, shared = spec_ids(specs_naming(specs, claim.uid)), spec_ids(driver_wide(specs))
    stray = set(ids) - own - shared
    ok = bool(set(ids) & own) and not stray
    return ok, (
        f"IDs {sorted(ids)}; defined by claim {claim.name}'s own spec: {sorted(own)}; by driver-wide specs: "
        f"{sorted(shared)}; by neither (another claim's or undefined): {sorted(stray)}; spec files: {sorted(specs)}"
    )


def _edits_of(raw: dict | None) -> dict[str, frozenset]:
    """The comparable parts of one CDI ``containerEdits``: env entries, device nodes ``(path, hostPath)``
    (hostPath defaults to path), with ``(type, major, minor)`` added when type and major are set (such a node
    is created from its numbers, not from hostPath: container-device-interface ``container-edits_unix.go``),
    mounts ``(hostPath, containerPath, options)``, network devices ``(hostInterfaceName, name)`` and additional
    GIDs, each as a set."""
    raw = raw or {}
    return {
        "env": frozenset(raw.get("env") or []),
        "deviceNodes": frozenset(
            (n.get("path"), n.get("hostPath") or n.get("path"))
            + ((n.get("type"), n.get("major"), n.get("minor")) if n.get("type") and n.get("major") is not None else ())
            for n in raw.get("deviceNodes") or []
        ),
        "netDevices": frozenset((d.get("hostInterfaceName"), d.get("name")) for d in raw.get("netDevices") or []),
        "additionalGIDs": frozenset(raw.get("additionalGIDs") or []),
        "mounts": frozenset(
            (m.get("hostPath"), m.get("containerPath"), tuple(sorted(m.get("options") or [])))
            for m in raw.get("mounts") or []
        ),
    }


def device_edits(specs: dict[str, str]) -> dict[str, dict[str, frozenset]]:
    """What each CDI device of the spec files ``specs`` (``{file name: text}``) puts into a container, by its
    fully-qualified ID ``<kind>=<name>``: ``{"env": {...}, "deviceNodes": {(path, hostPath[, type,
    major, minor])}, "mounts": {(hostPath, containerPath, options)}, "netDevices": {...}, "additionalGIDs":
    {...}}``, the spec-wide ``containerEdits`` folded into each of its devices (a runtime applies them with any
    device of the spec). Left out, as a new driver version may change them
    without changing what a container gets: ``cdiVersion``, file names, annotations, the order of entries,
    device node permissions, uid and gid, major/minor of a node without type (the node at ``hostPath`` is what
    is injected) and hooks (their
    tool paths and arguments change between versions). Source: CDI SPEC.md (``containerEdits``)."""
    out: dict[str, dict[str, frozenset]] = {}
    for text in specs.values():
        spec = parse(text)
        common = _edits_of(spec.get("containerEdits"))
        for dev in spec.get("devices") or []:
            own = _edits_of(dev.get("containerEdits"))
            out[f"{spec.get('kind')}={dev.get('name')}"] = {k: own[k] | common[k] for k in own}
    return out


def same_edits(before: dict[str, str], after: dict[str, str]) -> tuple[bool, str]:
    """``(same, evidence)``: whether the spec files ``after`` give a container exactly what ``before`` gave, per
    CDI device ID (:func:`device_edits`): the same IDs, and for each the same env, device nodes and mounts.
    The evidence names each device ID whose edits changed and what was removed (-) and added (+), or the IDs
    compared when nothing changed. Source: KEP-4381 (a claim prepared once keeps its devices until unprepared)."""
    old, new = device_edits(before), device_edits(after)
    problems = [f"{i}: gone" for i in sorted(set(old) - set(new))]
    problems += [f"{i}: new" for i in sorted(set(new) - set(old))]
    for dev in sorted(set(old) & set(new)):
        for part in old[dev]:
            gone, added = old[dev][part] - new[dev][part], new[dev][part] - old[dev][part]
            if gone or added:
                problems.append(f"{dev} {part}: -{sorted(gone, key=str)} +{sorted(added, key=str)}")
    if problems:
        return False, f"CDI edits changed ({sorted(before)} -> {sorted(after)}): " + "; ".join(problems)
    return bool(old), f"CDI device IDs {sorted(old) or 'none'} give the same env, device nodes and mounts"
