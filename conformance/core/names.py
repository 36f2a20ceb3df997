"""Derived object names and the run/test labels every object carries (design.md §3). Pure: no I/O.

Label keys live under ``dra-conformance.test/``: ``run`` (the run ID), ``test`` (a hash-safe test ID) and
``managed`` (``true`` on everything the suite creates). Names are DNS-1123 labels (≤ 63 chars).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time

LABEL_PREFIX = "dra-conformance.test"
RUN_LABEL = f"{LABEL_PREFIX}/run"
TEST_LABEL = f"{LABEL_PREFIX}/test"
MANAGED_LABEL = f"{LABEL_PREFIX}/managed"
# The namespace label that allows adminAccess requests (KEP-5018).
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def new_run_id() -> str:
    """A fresh run ID, e.g. ``r20261130-1332-a1b2`` (UTC time + 4 hex), valid as a label value."""
    return time.strftime("r%Y%m%d-%H%M", time.gmtime()) + "-" + secrets.token_hex(2)


def dns_label(text: str, max_len: int = 63) -> str:
    """``text`` lower-cased with invalid characters as ``-``; if too long, cut and suffixed by a hash."""
    base = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or "x"
    if len(base) <= max_len:
        return base
    digest = hashlib.sha1(text.encode()).hexdigest()[:6]
    return base[: max_len - 7].rstrip("-") + "-" + digest


def is_dns_label(text: str) -> bool:
    """Whether ``text`` is a valid DNS-1123 label."""
    return len(text) <= 63 and bool(_DNS_LABEL.match(text))


def label_value(text: str) -> str:
    """``text`` as a valid label value (≤ 63 chars, alphanumerics at both ends)."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-_.")
    if len(value) > 63:
        value = value[:56].rstrip("-_.") + "-" + hashlib.sha1(text.encode()).hexdigest()[:6]
    return value or "x"


def test_id(nodeid: str) -> str:
    """A short label-safe test ID from a pytest node ID: the test name plus a 6-hex hash of the node ID."""
    name = nodeid.split("::")[-1]
    digest = hashlib.sha1(nodeid.encode()).hexdigest()[:6]
    return dns_label(name, 50) + "-" + digest


class Namer:
    """Derives unique object names for one test: ``<prefix>-<kind>-<n>``.

    ``prefix`` is normally the namespace or the test ID; ``next("claim")`` returns ``<prefix>-claim-1``,
    then ``-2``... Cluster-scoped names add the run ID so parallel runs never collide.
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = dns_label(prefix, 40)
        self._counts: dict[str, int] = {}

    def next(self, kind: str) -> str:
        """The next name for ``kind`` (a DNS label ≤ 63 chars)."""
        self._counts[kind] = self._counts.get(kind, 0) + 1
        return dns_label(f"{self.prefix}-{kind}-{self._counts[kind]}")


def run_labels(run_id: str, test: str = "") -> dict[str, str]:
    """Labels for an object created by run ``run_id`` (and test ``test`` when given)."""
    labels = {RUN_LABEL: label_value(run_id), MANAGED_LABEL: "true"}
    if test:
        labels[TEST_LABEL] = label_value(test)
    return labels
