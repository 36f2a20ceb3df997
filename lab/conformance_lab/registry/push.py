"""Push the lab's cached OCI archives (one image manifest each, conformance_lab.toolchain.images.oci) to a
registry over the OCI distribution API, with the standard library only (plain HTTP: the lab's registry listens
on the loopback; an ``https://`` registry is tried first for other hosts).

Source: OCI distribution-spec v1.1 "Pushing blobs" (``HEAD /v2/<name>/blobs/<digest>``, ``POST
/v2/<name>/blobs/uploads/`` then a monolithic ``PUT <location>?digest=<digest>``) and "Pushing manifests"
(``PUT /v2/<name>/manifests/<tag>`` with the manifest's media type; the registry answers its digest in
``Docker-Content-Digest``).
"""

from __future__ import annotations

import json
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from conformance.images import ImageError, in_registry
from conformance_lab.toolchain.images.oci import verify_archive

_TIMEOUT_S = 120


def _request(method: str, url: str, body=None, headers: dict[str, str] | None = None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        return urllib.request.urlopen(req, timeout=_TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        if method == "HEAD" and exc.code == 404:
            return None
        detail = exc.read().decode(errors="replace")[:500]
        raise ImageError(f"{method} {url}: HTTP {exc.code} {exc.reason}: {detail}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise ImageError(f"{method} {url}: {exc}; is the registry running and reachable?") from exc


def _base_url(host: str) -> str:
    if host.startswith(("127.", "localhost", "[::1]")):
        return f"http://{host}"
    return f"https://{host}"


def _push_blob(base: str, repo: str, tf: tarfile.TarFile, digest: str) -> bool:
    """Upload one blob unless the registry has it; True when it was uploaded."""
    if _request("HEAD", f"{base}/v2/{repo}/blobs/{digest}") is not None:
        return False
    with _request("POST", f"{base}/v2/{repo}/blobs/uploads/") as resp:
        location = urllib.parse.urljoin(f"{base}/", resp.headers["Location"])
    member = tf.getmember(f"blobs/sha256/{digest.split(':', 1)[1]}")
    sep = "&" if "?" in location else "?"
    headers = {"Content-Type": "application/octet-stream", "Content-Length": str(member.size)}
    with tf.extractfile(member) as blob, _request("PUT", f"{location}{sep}digest={digest}", blob, headers) as resp:
        if resp.status != 201:
            raise ImageError(f"blob {digest} upload to {base}/v2/{repo}: HTTP {resp.status}, expected 201")
    return True


def push_archive(archive: Path, registry: str) -> str:
    """Push the image of ``archive`` to ``registry`` (``HOST[:PORT][/PREFIX]``) under the path of its own name
    (conformance.images.in_registry); return the pushed reference. Blobs the registry already has are skipped.
    Raises ImageError naming the archive, the URL and what the registry answered."""
    info = verify_archive(archive)
    target = in_registry(info.ref, registry)
    host, _, rest = target.partition("/")
    repo, _, tag = rest.rpartition(":")
    base = _base_url(host)
    with tarfile.open(archive) as tf:
        manifest_bytes = tf.extractfile(f"blobs/sha256/{info.digest.split(':', 1)[1]}").read()
        manifest = json.loads(manifest_bytes)
        for desc in [manifest["config"], *manifest["layers"]]:
            _push_blob(base, repo, tf, desc["digest"])
    headers = {"Content-Type": manifest.get("mediaType", "application/vnd.oci.image.manifest.v1+json")}
    with _request("PUT", f"{base}/v2/{repo}/manifests/{tag}", manifest_bytes, headers) as resp:
        answered = resp.headers.get("Docker-Content-Digest", "")
    if answered and answered != info.digest:
        raise ImageError(f"{target}: the registry stored manifest {answered}, {archive} has {info.digest}")
    return target


def manifest_digest(ref: str) -> str:
    """The manifest digest a registry serves for ``ref`` (``HOST[:PORT]/REPO:TAG``), from ``HEAD
    /v2/<repo>/manifests/<tag>``; raises ImageError when it has none."""
    host, _, rest = ref.partition("/")
    repo, _, tag = rest.rpartition(":")
    accept = {"Accept": "application/vnd.oci.image.manifest.v1+json"}
    resp = _request("HEAD", f"{_base_url(host)}/v2/{repo}/manifests/{tag}", headers=accept)
    if resp is None:
        raise ImageError(f"{ref}: the registry has no such manifest; push it with `dra-conformance images push`")
    with resp:
        return resp.headers.get("Docker-Content-Digest", "")
