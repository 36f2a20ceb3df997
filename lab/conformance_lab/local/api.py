"""A tiny HTTPS client for the bring-up waits (mutual TLS with the admin cert), and the bounded waits:
apiserver /readyz, nodes Ready, the ``default`` ServiceAccount, ``kube-root-ca.crt``, the DRA API served.

Kept independent of conformance/k8s so the cluster layer stays below it. Every wait is bounded and its
error names what was awaited and the last observed state (design.md §7).
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from conformance.core.errors import CLUSTER, WaitFailed, WaitTimeout
from conformance.k8s import waits


class Api:
    """HTTPS to ``server`` with client cert/key, verifying with ``ca``."""

    def __init__(self, server: str, ca: Path, cert: Path, key: Path) -> None:
        self.server = server.rstrip("/")
        self.ctx = ssl.create_default_context(cafile=str(ca))
        self.ctx.load_cert_chain(str(cert), str(key))

    def request(self, method: str, path: str, body: dict | None = None, timeout: float = 10.0) -> tuple[int, str]:
        """(HTTP status, body text); status 0 with the error text when the server cannot be reached."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=timeout) as resp:
                return resp.status, resp.read().decode(errors="replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")
        except (urllib.error.URLError, OSError) as exc:
            return 0, str(getattr(exc, "reason", exc))

    def get_json(self, path: str) -> dict | None:
        """The decoded object, or None when the request did not return 200."""
        status, text = self.request("GET", path)
        return json.loads(text) if status == 200 else None


def wait_for(
    awaited: str,
    probe: Callable[[], tuple[bool, str]],
    timeout: float,
    interval: float = 0.25,
    failed: Callable[[], str | None] | None = None,
) -> None:
    """Poll ``probe`` (-> (done, observed state)) until done; raises WaitTimeout with the last state.

    ``failed`` (-> message or None) ends the wait early with WaitFailed, e.g. when the awaited process exited.
    """
    last = ""

    def check() -> bool:
        nonlocal last
        done, last = probe()
        why = None if done or not failed else failed()
        if why:
            raise WaitFailed(awaited, timeout, last, failed=why)
        return done

    if not waits.poll(check, timeout=timeout, interval=interval, scale=False):
        raise WaitTimeout(awaited, timeout, last, party=CLUSTER)  # the lab's own cluster and disruptions


def readyz(api: Api) -> tuple[bool, str]:
    status, text = api.request("GET", "/readyz", timeout=5)
    return status == 200, f"/readyz -> {status}: {text[-300:]}"


def nodes_ready(api: Api, names: list[str]) -> tuple[bool, str]:
    """All ``names`` registered with condition Ready=True."""
    nodes = api.get_json("/api/v1/nodes")
    if nodes is None:
        return False, "GET /api/v1/nodes failed"
    state = {}
    for node in nodes.get("items", []):
        conds = {c["type"]: c for c in node.get("status", {}).get("conditions", [])}
        ready = conds.get("Ready", {})
        state[node["metadata"]["name"]] = f"Ready={ready.get('status', '?')} ({ready.get('message', '')[:120]})"
    done = all(state.get(n, "").startswith("Ready=True") for n in names)
    observed = "; ".join(f"{n}: {state.get(n, 'not registered')}" for n in names)
    return done, observed


def exists(api: Api, path: str) -> tuple[bool, str]:
    status, text = api.request("GET", path)
    return status == 200, f"GET {path} -> {status} {text[:200]}"


def served_versions(api: Api, group: str) -> list[str]:
    """Versions of API ``group`` the server lists in discovery (``/apis/<group>``); [] when absent."""
    doc = api.get_json(f"/apis/{group}")
    return [v["version"] for v in (doc or {}).get("versions", [])]
