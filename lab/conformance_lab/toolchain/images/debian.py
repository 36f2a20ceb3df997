"""A Debian root filesystem assembled without Docker, debootstrap or a chroot: resolve the dependency closure
of a few packages from this machine's apt lists, ``apt-get download`` the .deb files (apt checks them against
the signed index) and unpack them with ``dpkg-deb -x``. Maintainer scripts never run, so the closure skips
the packaging tools a container never runs (:data:`NOT_IN_IMAGES`) and :func:`finish_rootfs` does the few
things their scripts would (``ldconfig``, the ``/usr/bin/python`` link).

Source: Debian Policy §7 (Depends/Pre-Depends, alternatives ``a | b``, virtual packages); ``apt-cache
depends``/``show`` output; dpkg-deb(1).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path

from conformance_lab.toolchain.images import store
from conformance_lab.toolchain.images.oci import ImageError

# Packaging and admin tools pulled in by Depends that only maintainer scripts use (dpkg, debconf, perl,
# tar, install-info) and the mime/mailcap helpers of desktop mail readers.
NOT_IN_IMAGES = frozenset(
    {"dpkg", "debconf", "install-info", "perl", "perl-base", "perl-modules-5.36", "libperl5.36", "tar",
     "mailcap", "mime-support", "libgdbm-compat4", "debianutils", "init-system-helpers", "usrmerge"}
)  # fmt: skip
_DEP = re.compile(r"^ (?P<alt>[ |])(?:Pre)?Depends: (?P<name><?[^>\s]+>?)")


@dataclasses.dataclass(frozen=True)
class Package:
    """One Debian binary package at its candidate version (``apt-cache show``)."""

    name: str
    version: str
    arch: str

    @property
    def deb_name(self) -> str:
        """The file name ``apt-get download`` writes (an epoch's ``:`` becomes ``%3a``)."""
        return f"{self.name}_{self.version.replace(':', '%3a')}_{self.arch}.deb"


def _run(argv: list[str], what: str, timeout: int = 300, cwd: Path | None = None) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except FileNotFoundError:
        raise ImageError(
            f"{argv[0]} is not installed ({what}); this builder needs a Debian-like host with apt"
        ) from None
    if proc.returncode != 0:
        raise ImageError(f"{what} failed: {' '.join(argv[:4])}...: {proc.stderr.strip()[-800:]}")
    return proc.stdout


def parse_depends(text: str) -> dict[str, list[str]]:
    """``apt-cache depends`` output -> {package: [dependency chosen per group]}: the first of alternatives
    ``a | b``; a virtual package ``<v>`` is resolved to its first provider (the indented line after it)."""
    deps: dict[str, list[str]] = {}
    current, skip_next, pending_virtual = "", False, False
    for line in text.splitlines():
        if not line.startswith(" "):
            current, skip_next, pending_virtual = line.strip(), False, False
            deps.setdefault(current, [])
            continue
        if pending_virtual and line.startswith("    "):
            deps[current].append(line.strip())
            pending_virtual = False
            continue
        m = _DEP.match(line)
        if not m:
            continue
        pending_virtual = False
        name, alternative = m["name"], m["alt"] == "|"
        if not skip_next:
            if name.startswith("<"):
                pending_virtual = True
            else:
                deps[current].append(name)
        skip_next = alternative
    return deps


def parse_show(text: str) -> dict[str, Package]:
    """``apt-cache show --no-all-versions`` output -> {name: Package}."""
    found: dict[str, Package] = {}
    for stanza in text.split("\n\n"):
        fields = dict(re.findall(r"^(Package|Version|Architecture): (\S+)", stanza, re.M))
        if "Package" in fields:
            found[fields["Package"]] = Package(fields["Package"], fields["Version"], fields["Architecture"])
    return found


def resolve(roots: list[str]) -> list[Package]:
    """The Depends/Pre-Depends closure of ``roots`` at their candidate versions, minus :data:`NOT_IN_IMAGES`,
    sorted by name. A root ``name=version`` takes that version (e.g. Debian's own nodejs where a newer one from
    another source is installed on this host, which apt cannot download). Raises ImageError when apt knows
    none of a package (fix: ``apt-get update``)."""
    pinned = dict(r.split("=", 1) for r in roots if "=" in r)
    seen: set[str] = set()
    frontier = list(dict.fromkeys(roots))
    while frontier:
        seen.update(f.split("=", 1)[0] for f in frontier)
        out = _run(["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks",
                    "--no-replaces", "--no-enhances", *frontier], "apt-cache depends")  # fmt: skip
        deps = parse_depends(out)
        frontier = sorted({d for ds in deps.values() for d in ds if d not in seen and d not in NOT_IN_IMAGES})
    names = sorted(seen)
    wanted = [f"{n}={pinned[n]}" if n in pinned else n for n in names]
    packages = parse_show(_run(["apt-cache", "show", "--no-all-versions", *wanted], "apt-cache show"))
    missing = [n for n in names if n not in packages]
    if missing:
        raise ImageError(f"apt knows no package {missing}; run `apt-get update` (Debian 12 package names)")
    return [packages[n] for n in names]


def download(packages: list[Package]) -> list[Path]:
    """The .deb files of ``packages`` in ``<cache>/images/debs`` (downloaded once; apt verifies each
    against the signed index). Raises ImageError when apt cannot fetch one."""
    debs = store.images_dir() / "debs"
    debs.mkdir(exist_ok=True)
    want = [p for p in packages if not (debs / p.deb_name).is_file()]
    if want:
        tmp = store.work_dir("debs")
        try:
            _run(
                ["apt-get", "download", "-q", *[f"{p.name}={p.version}" for p in want]],
                "apt-get download",
                900,
                cwd=tmp,
            )
            for p in want:
                if (tmp / p.deb_name).is_file():
                    os.replace(tmp / p.deb_name, debs / p.deb_name)
        finally:
            store.drop(tmp)
    paths = [debs / p.deb_name for p in packages]
    absent = [p.name for p in paths if not p.is_file()]
    if absent:
        raise ImageError(f"apt-get download did not produce {absent}; run `apt-get update` and retry")
    return paths


def unpack(debs: list[Path], root: Path) -> None:
    """``dpkg-deb -x`` every .deb into ``root`` (no maintainer scripts)."""
    for deb in debs:
        _run(["dpkg-deb", "-x", str(deb), str(root)], f"dpkg-deb -x {deb.name}")


def finish_rootfs(root: Path) -> None:
    """What the skipped maintainer scripts would leave that a program needs: ``/etc/ld.so.cache``
    (``ldconfig -r``), ``/usr/bin/python`` -> ``python3`` when Python is there, and ``/tmp``."""
    (root / "etc").mkdir(exist_ok=True)
    (root / "tmp").mkdir(mode=0o1777, exist_ok=True)
    os.chmod(root / "tmp", 0o1777)
    if os.geteuid() == 0 and (root / "etc/ld.so.conf.d").is_dir():
        (root / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
        _run(["ldconfig", "-r", str(root)], "ldconfig -r")
    python = root / "usr/bin/python"
    if (root / "usr/bin/python3").exists() and not python.exists():
        python.symlink_to("python3")
