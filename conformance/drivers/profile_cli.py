"""``dra-conformance profile list|show|schema|check|init``: author a driver profile (issue 22 §3).

- ``list``: the shipped profiles, one per line (name, driver, description); exit 0;
- ``show NAME``: print a shipped profile's YAML (a starting point for your own: rename its ``name`` to the new
  file's stem); exit 4 for an unknown name, naming the shipped ones;
- ``schema``: print the profile JSON Schema (:mod:`conformance.core.profile_schema`) for editors;
- ``check FILE...``: load each profile as ``run`` does (:func:`conformance.drivers.profiles.load`: the schema,
  every semantic check, the file's name and relative paths, ``upgrade_from``); prints ``ok FILE`` or
  ``error FILE: KEY: problem (fix: ...)`` (the parser's first problem), then ``  also KEY: problem`` for each
  other problem the JSON Schema finds; exit 0 when all are good, 4 (bad input) otherwise. Only the shipped deploy
  modes are known (a mode registered by a plugin is checked by ``run -p MODULE``);
- ``init --driver-name NAME [--kubeconfig K] [--context C] [-o FILE]``: draft a profile from what the installed
  driver publishes (:mod:`conformance.drivers.profile_init`; read-only on the cluster); exit 0, 4 for a bad
  kubeconfig or a driver the cluster publishes nothing of (naming the drivers it does publish), 3 when the
  cluster cannot be reached.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jsonschema
import yaml

from conformance.core import errors, profile_schema
from conformance.drivers import profile_init, profiles
from conformance.k8s import discovery, kubeconfig
from conformance.k8s.client import K8s

EXIT_BAD_INPUT = 4
EXIT_NO_CLUSTER = 3


def _list(args: argparse.Namespace) -> int:
    for name in profiles.available():
        p = profiles.load(name)
        print(f"{name:<28} {p.driver:<32} {p.description}")
    return 0


def _show(args: argparse.Namespace) -> int:
    try:
        path = profiles.resolve(args.name)
    except errors.ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    sys.stdout.write(path.read_text())
    return 0


def _schema(args: argparse.Namespace) -> int:
    sys.stdout.write(profile_schema.text())
    return 0


def _check(args: argparse.Namespace) -> int:
    bad = 0
    for name in args.files:
        try:
            loaded = profiles.load(name)
        except errors.ConfigError as exc:
            bad += 1
            # profiles.resolve names the option of `run` (--driver); here the input is the FILE argument
            print(f"error: {name}: {exc.detail} (fix: {exc.fix})" if exc.source == "--driver" else f"error: {exc}")
            for also in _schema_problems(name, exc.field):
                print(f"  also {also}")
            continue
        print(f"ok {loaded.source}")
        for note in untested_notes(loaded):
            print(f"  note: {note}", file=sys.stderr)
    return EXIT_BAD_INPUT if bad else 0


def untested_notes(profile) -> list[str]:
    """What a valid profile leaves untested by what it omits (breaker s15 C6/C9), one line each with the key that
    would test it; the verdict line of a run names the same (conformance/reporting/qualifiers.py). ``profile``: a
    :class:`conformance.core.profile.DriverProfile`."""
    caps, notes = profile.capabilities, []
    if caps.get("health") and not profile.health_annotation:
        notes.append("health: true without health_switch: the Healthy -> Unhealthy -> Healthy transition is untested")
    if caps.get("opaque_config", True) and not profile.opaque_parameters:
        notes.append("no opaque_config.parameters sample: opaque config is untested (or declare opaque_config: false)")
    elif caps.get("opaque_config", True) and not profile.opaque_override:
        notes.append("no opaque_config.override sample: claim config overriding class config is untested")
    if caps.get("admin_access", True) and not profile.admin_access_signal:
        notes.append("no admin_access_signal: what a container of an adminAccess claim shows is untested")
    if caps.get("cdi", True) and not profile.cdi_identity:
        notes.append("no cdi_identity pattern: the CDI device nodes/mounts/env of an allocated device are untested")
    return notes


def _schema_problems(name: str, reported: str) -> list[str]:
    """The other problems the JSON Schema finds in profile ``name`` (``dotted.key: message``), besides the
    one the parser reported at ``reported`` (the parser stops at its first problem)."""
    try:
        raw = yaml.safe_load(profiles.resolve(name).read_text(encoding="utf-8"))
    except (errors.ConfigError, OSError, UnicodeDecodeError, yaml.YAMLError):  # load() named it already
        return []
    validator = jsonschema.Draft202012Validator(profile_schema.generate())
    out = []
    for err in validator.iter_errors(raw):
        where = [str(p) for p in err.absolute_path]
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            found = [
                (".".join([*where, str(k)]), "unknown key") for k in err.instance if k not in err.schema["properties"]
            ]
        else:
            found = [(".".join(where) or "(top level)", err.message)]
        out += [f"{key}: {why}" for key, why in found if key != reported]
    return sorted(set(out))


def _init(args: argparse.Namespace) -> int:
    out = Path(args.output) if args.output else None
    if out is not None and out.suffix not in (".yaml", ".yml"):
        print(f"error: -o {out}: a profile file ends in .yaml (its stem is the profile's name)", file=sys.stderr)
        return EXIT_BAD_INPUT
    kube = kubeconfig.resolve(args.kubeconfig, args.context)
    try:
        k8s = K8s.from_kubeconfig(kube)
        discovery.server_version(k8s)  # unreachable: ClusterUnavailable, one line, exit 3 (breaker s15 C5)
        facts = profile_init.collect(k8s, args.driver_name)
    except errors.ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (errors.ConformanceError, OSError) as exc:
        print(f"error: cannot read the cluster of {kube.describe()}: {exc}", file=sys.stderr)
        return EXIT_NO_CLUSTER
    if not facts["inventory"].devices and not facts["classes"]:
        seen = sorted({str(s.get("spec.driver")) for s in k8s.list("ResourceSlice")})
        print(
            f"error: --driver-name {args.driver_name}: the cluster of {kube.describe()} publishes no ResourceSlice "
            f"device and no DeviceClass of that driver (fix: one of the drivers it publishes: "
            f"{', '.join(seen) or 'none'})",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    name = out.stem if out is not None else args.driver_name
    text = profile_init.draft(facts, args.driver_name, name, source=kube.describe())
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
        print(f"wrote {out}: fill its TODOs (REQUIRED: visibility), then dra-conformance profile check {out}")
    return 0


def register(subparsers) -> None:
    """Add the ``profile`` command with its subcommands ``list``, ``show``, ``schema``, ``check`` and ``init``."""
    parser = subparsers.add_parser(
        "profile",
        help="write a driver profile: its JSON Schema, a check, a draft from an installed driver",
        description="Write a driver profile: print its JSON Schema, check profiles, draft one from an installed "
        "driver. Guide: docs/writing-a-profile.md.",
    )
    sub = parser.add_subparsers(dest="profile_command", required=True, metavar="SUBCOMMAND")
    sub.add_parser("list", help="the shipped profiles: name, driver, description").set_defaults(func=_list)
    show = sub.add_parser("show", help="print a shipped profile's YAML (a start for your own)")
    show.add_argument("name", help="a shipped profile's name (profile list)")
    show.set_defaults(func=_show)
    schema = sub.add_parser("schema", help="print the profile JSON Schema (for editors: yaml-language-server)")
    schema.set_defaults(func=_schema)
    check = sub.add_parser("check", help="check profiles as `run` loads them: ok FILE, or each problem and its fix")
    check.add_argument("files", nargs="+", metavar="FILE", help="a profile file, or the name of a shipped profile")
    check.set_defaults(func=_check)
    init = sub.add_parser("init", help="draft a profile from what an installed driver publishes (read-only)")
    init.add_argument("--driver-name", required=True, help="the driver's name: its ResourceSlices' spec.driver")
    kubeconfig.add_options(init)
    init.add_argument(
        "-o", "--output", metavar="FILE", help="write the draft to FILE.yaml (its stem is the name; default: stdout)"
    )
    init.set_defaults(func=_init)
