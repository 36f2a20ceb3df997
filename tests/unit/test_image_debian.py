"""The Debian closure resolver reads apt-cache output as Debian Policy §7 defines dependencies: the first of
alternatives, a provider for a virtual package, Pre-Depends like Depends."""

from conformance_lab.toolchain.images import debian

DEPENDS = """\
libpython3.11-stdlib
  Depends: libpython3.11-minimal
 |Depends: media-types
  Depends: mime-support
  Depends: libc6
  Depends: <libdb-dev-virtual>
    libdb5.3
python3-minimal
  PreDepends: python3.11-minimal
  Depends: dpkg
"""

SHOW = """\
Package: libc6
Version: 2.36-9+deb12u14
Architecture: amd64
Filename: pool/main/g/glibc/libc6_2.36-9+deb12u14_amd64.deb

Package: zlib1g
Version: 1:1.2.13.dfsg-1+deb12u1
Architecture: amd64
"""


def test_depends_takes_first_alternative_and_a_virtual_provider():
    deps = debian.parse_depends(DEPENDS)
    assert deps["libpython3.11-stdlib"] == ["libpython3.11-minimal", "media-types", "libc6", "libdb5.3"]
    assert deps["python3-minimal"] == ["python3.11-minimal", "dpkg"]


def test_show_gives_versions_and_the_download_file_name():
    pkgs = debian.parse_show(SHOW)
    assert pkgs["libc6"].deb_name == "libc6_2.36-9+deb12u14_amd64.deb"
    assert pkgs["zlib1g"].deb_name == "zlib1g_1%3a1.2.13.dfsg-1+deb12u1_amd64.deb", "an epoch's ':' is %3a"


def test_packaging_tools_stay_out_of_images():
    assert {"dpkg", "perl-base", "debconf", "tar"} <= debian.NOT_IN_IMAGES
