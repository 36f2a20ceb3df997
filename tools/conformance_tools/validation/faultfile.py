"""``fixtures/faults.yaml``: which suite tests must fail for each fault of the reference driver.

Format (version 1)::

    version: 1
    defaults:                      # optional; every key of an entry below except class/select/expect
      profile: standard            # core | standard | full | disruptive (disruptive adds --allow-disruptive)
      timeout_scale: 0.5           # --timeout-scale of the run (short teardowns under unprepare faults)
    faults:
      prepare-error:               # a name of reference_driver/faults.py FAULTS; every fault needs an entry
        class: NodePrepareResources fails; pods must not start    # one line: the failure class it models
        symptom: 'FailedPrepareDynamicResources'   # required: a regex searched (case-insensitive) in each expected
                                   # test's failure message (its first lines); a failure without it is
                                   # caught-by-accident, not caught
        symptom_class: driver-defect   # optional: the failure class it must have (conformance/reporting/classify.py;
                                   # default driver-defect: a fault of the driver is the driver's; 'any' = no check)
        select:                    # what to run: suite files, directories or node IDs (pytest arguments)
          - suites/smoke/test_smoke.py
        expect:                    # tests that must FAIL with the fault on (and pass without it): node IDs,
          - suites/smoke/test_smoke.py::test_pod_with_claim_runs_and_sees_its_device   # a parametrized test
                                   # by its base ID, or a glob with * / ? (e.g. suites/node/test_prepare.py::*);
                                   # run::setup: the harness refuses the driver before any test (exit 3);
          - test: suites/node/test_kep5970.py::test_pod_passes_resource_preparation_without_errors
            symptom: 'prepare.*failed'   # a mapping overrides the fault's symptom for that test
        profile: standard          # optional, as in defaults
        timeout_scale: 0.3         # optional, as in defaults
        min_k8s: "1.35"            # optional: the oldest minor the fault's test runs on (a release gap below)
        run_args: [--driver, fixtures/drivers/x.yaml]   # optional extra `dra-conformance run` options
        pytest_args: [-k, "not slow"]                   # optional extra pytest arguments (after --)

Every problem (unknown fault, fault without entry, unknown key, missing file or test, an expected test its
selection does not run, a reserved run option) is reported at once, each naming the entry and the fix.
The fault names come from the reference driver itself (:func:`known_faults`, a subprocess: the driver is a
product of its own, never imported by the harness).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from conformance import shipped
from conformance.core.errors import ConfigError
from conformance.core.markers import PROFILE_ORDER
from conformance.reporting.classify import CLASSES, DRIVER_DEFECT

REPO_ROOT = shipped.SOURCE_ROOT  # validate-suite runs from a checkout
DEFAULT_PATH = REPO_ROOT / "fixtures" / "faults.yaml"
VERSION = 1
TOP_KEYS = ("version", "defaults", "faults")
OPTION_KEYS = ("profile", "timeout_scale", "run_args", "pytest_args", "min_k8s")
DEFAULT_SYMPTOM_CLASS = DRIVER_DEFECT  # the class an expected failure must have unless the entry says otherwise
ANY_CLASS = "any"  # symptom_class: any -> no class check
ENTRY_KEYS = ("class", "symptom", "symptom_class", "select", "expect", *OPTION_KEYS)
EXPECT_KEYS = ("test", "symptom")
# results that are not test functions: the after-module invariant checks report as ``<module>::invariants``
SYNTHETIC_TESTS = ("invariants",)
# the run ended before any test because the harness refused the cluster or driver (exit 3 or 4), e.g. a driver
# that publishes no ResourceSlice (KEP-5970: "no slices for the driver -> clear error")
SETUP_RESULT = "run::setup"
BUILTIN_DEFAULTS = {"profile": "standard", "timeout_scale": 1.0, "run_args": (), "pytest_args": (), "min_k8s": ""}
# options the matrix sets itself for every run (one cluster and one report dir per fault)
RESERVED_RUN_ARGS = ("--cluster", "--kubeconfig", "--context", "--report-dir", "--no-report", "--keep-cluster")
RESERVED_RUN_ARGS += ("--profile", "--timeout-scale", "--k8s-version", "--feature-gates")


class FaultFileError(ConfigError):
    """faults.yaml is unusable; ``problems`` lists each problem (entry, what is wrong, the fix)."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__(
            f"{len(problems)} problem(s):\n" + "\n".join(f"  - {p}" for p in problems),
            source=source,
            fix="edit the file; its format is in tools/conformance_tools/validation/faultfile.py",
        )


@dataclasses.dataclass(frozen=True)
class FaultEntry:
    """One fault's row: ``name`` (a FAULTS key), ``failure_class`` (one line), ``select`` (pytest path
    arguments relative to the repository), ``expect`` (node IDs or globs that must fail), ``profile``,
    ``timeout_scale`` (> 0), ``run_args`` (extra run options), ``pytest_args`` (extra pytest arguments),
    ``symptom`` (a regex the failure message of each expected test must contain, case-insensitive; '' = any),
    ``symptom_class`` (the classify.py failure class it must have; default :data:`DEFAULT_SYMPTOM_CLASS`, since
    a fault the reference driver injects is a driver defect and a report blaming the cluster or the suite for it
    misleads its author (s15 breaker C2); '' when the file says ``any``), ``symptoms`` (expect pattern -> regex
    overriding ``symptom`` for that test) and ``min_k8s`` (``"1.35"``: its runs use at least that minor)."""

    name: str
    failure_class: str
    select: tuple[str, ...]
    expect: tuple[str, ...]
    profile: str = "standard"
    timeout_scale: float = 1.0
    run_args: tuple[str, ...] = ()
    pytest_args: tuple[str, ...] = ()
    symptom: str = ""
    symptom_class: str = DEFAULT_SYMPTOM_CLASS
    min_k8s: str = ""
    symptoms: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False, hash=False)

    def symptom_for(self, nodeid: str) -> str:
        """The symptom regex ``nodeid``'s failure must show: its expect entry's own, else the fault's."""
        for pattern, regex in self.symptoms.items():
            if expected_matches(pattern, nodeid):
                return regex
        return self.symptom

    @property
    def run_key(self) -> tuple:
        """What a run needs besides the selection and the timeout scale; entries with equal keys share one
        healthy run (at the smallest timeout scale among them)."""
        return (self.profile, self.run_args, self.pytest_args, self.min_k8s)


@dataclasses.dataclass(frozen=True)
class FaultFile:
    """The parsed file: ``source`` (its path) and ``entries`` by fault name, in file order."""

    source: str
    entries: Mapping[str, FaultEntry]

    def pick(self, names: Iterable[str] | None) -> list[FaultEntry]:
        """The entries of ``names`` (all when None or empty), in file order. Raises ConfigError naming an
        unknown name and the known ones."""
        wanted = [n for n in (names or []) if n]
        unknown = [n for n in wanted if n not in self.entries]
        if unknown:
            raise ConfigError(
                f"no fault(s) {unknown} in {self.source}",
                source="--faults",
                fix="pick from " + ", ".join(self.entries),
            )
        return [e for n, e in self.entries.items() if not wanted or n in wanted]


def expected_matches(pattern: str, nodeid: str) -> bool:
    """Whether the result ``nodeid`` is covered by the ``expect`` entry ``pattern``: the same ID, that ID
    with parameters (``test_x`` covers ``test_x[a]``), or a glob match when the pattern has ``*`` or ``?``."""
    if nodeid == pattern or (nodeid.startswith(pattern + "[") and "[" not in pattern):
        return True
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(nodeid, pattern.replace("[", "[[]"))
    return False


def known_faults(python: str = sys.executable) -> dict[str, str]:
    """``{fault name: description}`` from ``reference_driver.faults.FAULTS``, read in a subprocess.

    Raises ConfigError with the subprocess output when the driver package cannot be imported."""
    code = "import json\nfrom reference_driver.faults import FAULTS\nprint(json.dumps(FAULTS))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([python, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise ConfigError(
            f"cannot read the reference driver's fault list: {(proc.stderr or proc.stdout).strip()[-500:]}",
            source="reference_driver/faults.py",
            fix="run from the repository with its venv (`make venv`)",
        )
    return json.loads(proc.stdout)


def _split(item: str) -> tuple[Path, str]:
    """(file path under the repository, test name without parameters: '' for a whole file/dir)."""
    file_part, _, rest = item.partition("::")
    name = rest.split("::")[-1].split("[")[0] if rest else ""
    return REPO_ROOT / file_part, name


def _defined(path: Path, name: str) -> bool:
    return bool(re.search(rf"^\s*(async\s+)?def {re.escape(name)}\b", path.read_text(encoding="utf-8"), re.M))


def _check_test_ref(item: str, where: str, problems: list[str]) -> None:
    if item == SETUP_RESULT:
        return
    path, name = _split(item)
    if not item.startswith("suites/") or ".." in item:
        problems.append(f"{where}: {item!r} is not under suites/ (fix: a path such as suites/node/test_prepare.py)")
    elif not path.exists():
        problems.append(f"{where}: {item!r}: no such file or directory (fix: correct the path)")
    elif (
        name
        and name not in SYNTHETIC_TESTS
        and not any(c in name for c in "*?")
        and path.is_file()
        and not _defined(path, name)
    ):
        problems.append(f"{where}: {item!r}: no test {name!r} in {path.relative_to(REPO_ROOT)} (fix: correct the name)")


def _covered(pattern: str, select: Iterable[str]) -> bool:
    """Whether an expected test is inside one of the selected paths / node IDs."""
    if pattern == SETUP_RESULT:
        return True
    for sel in select:
        if "::" in sel:
            if expected_matches(sel, pattern) or pattern == sel or pattern.startswith(sel + "::"):
                return True
            continue
        file_part = pattern.split("::")[0]
        if file_part == sel.rstrip("/") or file_part.startswith(sel.rstrip("/") + "/"):
            return True
    return False


def _strings(value, where: str, problems: list[str], *, non_empty: bool) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        problems.append(f"{where}: expected a list of strings, got {value!r} (fix: - item per line)")
        return ()
    if non_empty and not value:
        problems.append(f"{where}: empty (fix: list at least one)")
    return tuple(value)


def _options(raw: Mapping, where: str, problems: list[str], base: Mapping) -> dict:
    out = dict(base)
    if "profile" in raw:
        if raw["profile"] not in PROFILE_ORDER:
            problems.append(f"{where}.profile: {raw['profile']!r} (fix: one of {', '.join(PROFILE_ORDER)})")
        else:
            out["profile"] = raw["profile"]
    if "timeout_scale" in raw:
        value = raw["timeout_scale"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            problems.append(f"{where}.timeout_scale: {value!r} (fix: a number > 0, e.g. 0.5)")
        else:
            out["timeout_scale"] = float(value)
    if "min_k8s" in raw:
        if not isinstance(raw["min_k8s"], str) or not re.fullmatch(r"1\.\d+", raw["min_k8s"]):  # 1.40 != "1.4"
            problems.append(f'{where}.min_k8s: {raw["min_k8s"]!r} (fix: a Kubernetes minor in quotes, e.g. "1.35")')
        out["min_k8s"] = str(raw["min_k8s"])
    for key in ("run_args", "pytest_args"):
        if key in raw:
            out[key] = _strings(raw[key], f"{where}.{key}", problems, non_empty=False)
    for arg in out["run_args"]:
        if arg.split("=")[0] in RESERVED_RUN_ARGS:
            problems.append(
                f"{where}.run_args: {arg!r} is set by validate-suite itself "
                "(fix: use the profile/timeout_scale keys or validate-suite's own options)"
            )
    return out


def _unknown_keys(raw: Mapping, allowed: Iterable[str], where: str, problems: list[str]) -> None:
    for key in raw:
        if key not in allowed:
            problems.append(f"{where}: unknown key {key!r} (fix: one of {', '.join(allowed)})")


def _entry(name: str, raw, defaults: Mapping, problems: list[str]) -> FaultEntry | None:
    where = f"faults.{name}"
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: expected a mapping with class, select, expect (got {raw!r})")
        return None
    _unknown_keys(raw, ENTRY_KEYS, where, problems)
    for key in ("class", "select", "expect"):
        if key not in raw:
            problems.append(f"{where}: missing {key!r} (fix: add it; see the format in the file header)")
    failure_class = raw.get("class", "")
    if "class" in raw and (not isinstance(failure_class, str) or not failure_class.strip() or "\n" in failure_class):
        problems.append(f"{where}.class: must be one non-empty line (got {failure_class!r})")
    select = _strings(raw.get("select", []), f"{where}.select", problems, non_empty=True) if "select" in raw else ()
    expect, symptoms = _expect(raw.get("expect", []), f"{where}.expect", problems) if "expect" in raw else ((), {})
    symptom = _regex(raw.get("symptom"), f"{where}.symptom", problems, required=True)
    symptom_class = raw.get("symptom_class", DEFAULT_SYMPTOM_CLASS)
    if symptom_class not in (*CLASSES, ANY_CLASS):
        problems.append(f"{where}.symptom_class: {symptom_class!r} (fix: one of {', '.join(CLASSES)} or {ANY_CLASS})")
    for item in select:
        _check_test_ref(item, f"{where}.select", problems)
    for item in expect:
        _check_test_ref(item, f"{where}.expect", problems)
        if select and "::" not in item:
            problems.append(f"{where}.expect: {item!r} is not a test (fix: suites/<file>.py::<test>, or a glob)")
        elif select and not _covered(item, select):
            problems.append(
                f"{where}.expect: {item!r} is not run by select {list(select)} (fix: add its file to select)"
            )
    options = _options(raw, where, problems, defaults)
    return FaultEntry(
        name,
        str(failure_class).strip(),
        select,
        expect,
        **options,
        symptom=symptom,
        symptom_class="" if symptom_class == ANY_CLASS else str(symptom_class or ""),
        symptoms=symptoms,
    )


def _regex(value, where: str, problems: list[str], *, required: bool) -> str:
    """``value`` checked as a regex: a non-empty string that compiles; '' (with a problem when required)."""
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        problems.append(
            f"{where}: missing or empty (fix: a regex of the failure message the fault must produce, e.g. "
            "symptom: 'FailedPrepareDynamicResources'; copy it from the fault run's summary.md)"
        )
        return ""
    try:
        re.compile(value)
    except re.error as exc:
        problems.append(f"{where}: {value!r} is not a regex: {exc} (fix: escape it, e.g. with \\. or [(])")
        return ""
    return value


def _expect(value, where: str, problems: list[str]) -> tuple[tuple[str, ...], dict[str, str]]:
    """expect items: node IDs, or ``{test: ID, symptom: REGEX}`` mappings; (patterns, pattern -> symptom)."""
    if isinstance(value, str) or not isinstance(value, list) or not value:
        problems.append(f"{where}: expected a non-empty list of node IDs (got {value!r}) (fix: - item per line)")
        return (), {}
    patterns, symptoms = [], {}
    for item in value:
        if isinstance(item, Mapping):
            _unknown_keys(item, EXPECT_KEYS, where, problems)
            test = item.get("test")
            if not isinstance(test, str) or not test:
                problems.append(
                    f"{where}: {dict(item)!r} has no test (fix: {{test: suites/x.py::test_y, symptom: RE}})"
                )
                continue
            symptoms[test] = _regex(item.get("symptom"), f"{where}[{test}].symptom", problems, required=True)
            patterns.append(test)
        elif isinstance(item, str) and item:
            patterns.append(item)
        else:
            problems.append(f"{where}: {item!r} is neither a node ID nor a {{test, symptom}} mapping")
    return tuple(patterns), symptoms


def parse(data, known: Iterable[str], source: str = str(DEFAULT_PATH)) -> FaultFile:
    """A :class:`FaultFile` from parsed YAML ``data``; ``known``: the reference driver's fault names (each must
    have an entry). Raises :class:`FaultFileError` listing every problem."""
    problems: list[str] = []
    if not isinstance(data, Mapping):
        raise FaultFileError(source, [f"top level: expected a mapping with {', '.join(TOP_KEYS)} (got {data!r})"])
    _unknown_keys(data, TOP_KEYS, "top level", problems)
    if data.get("version") != VERSION:
        problems.append(f"version: {data.get('version')!r} (fix: version: {VERSION})")
    raw_defaults = data.get("defaults") or {}
    if not isinstance(raw_defaults, Mapping):
        problems.append(f"defaults: expected a mapping (got {raw_defaults!r})")
        raw_defaults = {}
    _unknown_keys(raw_defaults, OPTION_KEYS, "defaults", problems)
    defaults = _options(raw_defaults, "defaults", problems, BUILTIN_DEFAULTS)
    faults = data.get("faults")
    if not isinstance(faults, Mapping) or not faults:
        raise FaultFileError(source, [*problems, "faults: expected a mapping of fault name -> entry"])
    known = list(known)
    for name in faults:
        if name not in known:
            problems.append(
                f"faults.{name}: unknown fault (fix: one of reference_driver/faults.py FAULTS: {', '.join(known)})"
            )
    missing = [n for n in known if n not in faults]
    if missing:
        problems.append(
            f"faults: no entry for {', '.join(missing)} (fix: add one per fault with class, select and expect)"
        )
    entries = {name: _entry(str(name), raw, defaults, problems) for name, raw in faults.items()}
    if problems:
        raise FaultFileError(source, problems)
    return FaultFile(source, {k: v for k, v in entries.items() if v is not None})


def load(path: str | Path = DEFAULT_PATH, known: Iterable[str] | None = None) -> FaultFile:
    """Read and check ``path`` against ``known`` fault names (default: :func:`known_faults`). Raises
    ConfigError when the file is missing or not YAML, :class:`FaultFileError` when it breaks the format."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(
            f"cannot read: {exc.strerror}",
            source=str(path),
            fix="validate-suite runs from a checkout of the dra-conformance repository (fixtures/faults.yaml and "
            "fixtures/self-validation); run it there, or pass --faults-file PATH",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", source=str(path)) from None
    return parse(data, known_faults() if known is None else known, str(path))
