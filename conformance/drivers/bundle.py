"""A manifest bundle: the Kubernetes objects a ``manifests`` deploy applies, read from the YAML a vendor ships
(a directory of ``*.yaml``/``*.yml``/``*.json`` files or one file) or rendered from a chart with
``helm template``. The deployer applies exactly these objects and, on tear-down, deletes exactly these.

Source: kubectl apply/delete -f (multi-document YAML, ``---`` separated); helm template.
"""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from conformance.core import errors

SUFFIXES = (".yaml", ".yml", ".json")


@dataclasses.dataclass(frozen=True)
class Bundle:
    """The objects of a bundle (``documents``, as parsed) and where they came from (``source``)."""

    documents: tuple[dict, ...]
    source: str

    def refs(self) -> list[str]:
        """``Kind namespace/name`` (``Kind name`` for cluster-scoped or unspecified) of every object."""
        out = []
        for doc in self.documents:
            meta = doc.get("metadata") or {}
            ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
            out.append(f"{doc['kind']} {ns}{meta['name']}")
        return out

    def of_kind(self, kind: str) -> list[dict]:
        """The objects of ``kind`` (e.g. ``DaemonSet``)."""
        return [d for d in self.documents if d.get("kind") == kind]

    def with_namespace(self, namespace: str) -> Bundle:
        """This bundle with a Namespace object ``namespace`` first (unless it has one): the deploy then creates
        it and its tear-down deletes it."""
        if any(d["metadata"]["name"] == namespace for d in self.of_kind("Namespace")):
            return self
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        return dataclasses.replace(self, documents=(ns, *self.documents))

    def text(self) -> str:
        """The bundle as multi-document YAML, Namespaces and CustomResourceDefinitions first (apply order)."""
        first = ("Namespace", "CustomResourceDefinition")
        docs = [d for d in self.documents if d.get("kind") in first]
        docs += [d for d in self.documents if d.get("kind") not in first]
        return yaml.safe_dump_all(docs, sort_keys=False)


def parse(text: str, source: str) -> Bundle:
    """The objects of multi-document YAML ``text`` (empty documents and ``List`` items flattened). Raises
    ConfigError naming ``source`` for invalid YAML, a document without kind/metadata.name, or no object."""
    try:
        raw = [d for d in yaml.safe_load_all(text) if d]
    except yaml.YAMLError as exc:
        raise errors.ConfigError(f"is not valid YAML: {exc}", source=source, fix="fix the manifests") from None
    docs: list[dict] = []
    for doc in raw:
        items = doc.get("items") if isinstance(doc, Mapping) and str(doc.get("kind", "")).endswith("List") else [doc]
        for item in items or []:
            if not isinstance(item, Mapping) or not item.get("kind") or not (item.get("metadata") or {}).get("name"):
                raise errors.ConfigError(
                    f"a document without kind or metadata.name: {str(item)[:200]}",
                    source=source,
                    fix="every document must be a Kubernetes object",
                )
            docs.append(dict(item))
    if not docs:
        raise errors.ConfigError("holds no Kubernetes object", source=source, fix="point deploy.dir at the manifests")
    return Bundle(tuple(docs), source)


def read(path: Path) -> Bundle:
    """The bundle in ``path``: one file, or every ``*.yaml``/``*.yml``/``*.json`` file of a directory (not
    recursive) in name order. Raises ConfigError (field ``deploy.dir``) when it does not exist or holds none."""
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in SUFFIXES and p.is_file())
    else:
        files = []
    if not files:
        raise errors.ConfigError(
            f"no manifests at {path} (a YAML/JSON file, or a directory holding {', '.join(SUFFIXES)} files)",
            field="deploy.dir",
            fix="point deploy.dir at the vendor's manifests (relative to the profile file)",
        )
    return parse("\n---\n".join(f.read_text() for f in files), str(path))


def render(helm: Path, chart: str, release: str, namespace: str, values_file: Path) -> Bundle:
    """``helm template RELEASE CHART --namespace NAMESPACE --values VALUES_FILE`` as a bundle (CRDs included).
    Raises ConfigError with helm's error when the chart does not render."""
    cmd = [str(helm), "template", release, chart, "--namespace", namespace, "--include-crds"]
    proc = subprocess.run([*cmd, "--values", str(values_file)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise errors.ConfigError(
            f"helm template failed: {proc.stderr.strip()[-1500:]}",
            field="deploy.chart",
            fix="fix the chart or its values",
        )
    return parse(proc.stdout, f"helm template {chart}")


def values_file(values: Mapping[str, Any], directory: Path) -> Path:
    """Write ``values`` as ``directory/values.yaml`` (created) and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "values.yaml"
    path.write_text(yaml.safe_dump(dict(values)))
    return path
