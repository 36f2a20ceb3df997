"""One kubeconfig resolution for every client of a run: our Kubernetes client, helm, kubectl, helper pods.

Order (kubectl's, "Organizing Cluster Access Using kubeconfig Files"): ``--kubeconfig`` -> ``$KUBECONFIG`` (a
list separated by ``os.pathsep``, ``:`` on Linux; the files are merged, the first file that sets a value wins)
-> ``~/.kube/config``; ``--context`` picks the context (None: the merged ``current-context``). The Kubernetes
Python client merges a list given as ``config_file`` itself (``kubernetes.config.kube_config.KubeConfigMerger``);
helm and kubectl take one ``--kubeconfig`` file, so a list reaches them as ``$KUBECONFIG`` in their environment,
and the context as ``--kube-context`` (helm) or ``--context`` (kubectl). Without this, a run could talk to two
clusters: node discovery honoured ``$KUBECONFIG`` while the session, helm and kubectl read ``~/.kube/config``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from conformance.core.errors import ConfigError

DEFAULT = Path(".kube") / "config"  # under the home directory
Source = "str | os.PathLike | Kubeconfig | None"  # what :func:`of` and ``K8s.from_kubeconfig`` take
CONTEXT_FLAG = {"helm": "--kube-context", "kubectl": "--context"}


@dataclasses.dataclass(frozen=True)
class Kubeconfig:
    """A resolved kubeconfig: ``paths`` (one file, or the files of a ``$KUBECONFIG`` list in merge order),
    ``context`` (None: the current-context), ``source`` (``--kubeconfig``, ``$KUBECONFIG`` or
    ``~/.kube/config``: where the paths came from, for messages)."""

    paths: tuple[Path, ...]
    context: str | None = None
    source: str = "--kubeconfig"

    @property
    def path(self) -> str:
        """The paths joined with ``os.pathsep``: what ``$KUBECONFIG`` and the Kubernetes client's
        ``config_file`` take (a single file for one path)."""
        return os.pathsep.join(str(p) for p in self.paths)

    def client_kwargs(self) -> dict[str, str | None]:
        """Keyword arguments of ``kubernetes.config.new_client_from_config``: ``config_file`` and ``context``."""
        return {"config_file": self.path, "context": self.context}

    def cli_args(self, tool: str) -> list[str]:
        """Arguments of ``tool`` (``helm`` or ``kubectl``) before its subcommand: ``--kubeconfig FILE`` for one
        file (a list goes through :meth:`env`), then the context flag (helm ``--kube-context``, kubectl
        ``--context``) when a context is set. Raises KeyError for another tool."""
        flag = CONTEXT_FLAG[tool]
        out = ["--kubeconfig", str(self.paths[0])] if len(self.paths) == 1 else []
        return out + ([flag, self.context] if self.context else [])

    def existing(self) -> Kubeconfig:
        """This kubeconfig, less the empty files of a list, when one of its files exists; raises ConfigError (bad
        input, exit 4, wherever the path came from: ``--kubeconfig``, ``$KUBECONFIG`` or the default
        ``~/.kube/config``) naming the path and how to give one when none exists, when a file is not a
        kubeconfig (not a YAML mapping, or not YAML), when every file is empty (``not a kubeconfig: empty``), or
        when ``context`` is set and no file defines it.

        An empty file (no YAML document: zero bytes, blanks or comments only) in a list is dropped, as kubectl
        and client-go skip it (``clientcmd.Load``: "if there's no data in a file, return the default object");
        the Kubernetes Python client refuses it (``KubeConfigMerger.load_config``: "file is empty"), so the list
        our client gets holds only the files that say something. A file that cannot be read is left to the
        client's loader (it names the OS error)."""
        if not any(p.is_file() for p in self.paths):
            raise ConfigError(f"no such kubeconfig file {self.path}", source=self.source, fix=self._fix())
        docs = {p: self._document(p) for p in self.paths if p.is_file()}
        kept = tuple(p for p in self.paths if docs.get(p, True) is not None)
        if not any(p in docs for p in kept):  # every file that exists is empty
            empty = os.pathsep.join(str(p) for p in docs)
            raise ConfigError("not a kubeconfig: empty", source=f"{empty} (from {self.source})", fix=self._fix())
        self._has_context([docs[p] for p in kept if p in docs])
        return dataclasses.replace(self, paths=kept)

    def _fix(self) -> str:
        if self.source == "--kubeconfig":
            return "give the path of a kubeconfig file"
        return "pass --kubeconfig PATH, or export KUBECONFIG=PATH of a kubeconfig file"

    def _document(self, path: Path) -> dict | None | bool:
        """``path``'s YAML mapping; None when it is empty (no YAML document); True when it cannot be read (left
        to the client's loader). Raises ConfigError naming the file when it is not UTF-8 text, or its YAML is
        not a mapping or not YAML."""
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError:
            return True
        except UnicodeDecodeError as exc:  # kubectl reads UTF-8 (a Windows editor's Latin-1 or UTF-16 save)
            raise ConfigError(
                f"not a kubeconfig: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
                source=f"{path} (from {self.source})",
                fix="save the file as UTF-8",
            ) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or type(exc).__name__
            raise ConfigError(
                f"not a kubeconfig: not YAML ({problem}{where})", source=f"{path} (from {self.source})", fix=self._fix()
            ) from None
        if doc is None or isinstance(doc, dict):
            return doc
        raise ConfigError(
            f"not a kubeconfig: not a mapping (its YAML is a {type(doc).__name__})",
            source=f"{path} (from {self.source})",
            fix=self._fix(),
        )

    def _has_context(self, docs: list) -> None:
        """Raise ConfigError (exit 4) when ``context`` is set and none of the files' documents ``docs`` (a
        mapping, or True for a file left to the client's loader) defines it, naming the contexts they define."""
        if not self.context or any(d is True for d in docs):
            return
        names = [str(c.get("name")) for d in docs for c in d.get("contexts") or [] if isinstance(c, dict)]
        if self.context not in names:
            raise ConfigError(
                f"kubeconfig {self.path} has no context {self.context!r} "
                f"(its contexts: {sorted(set(names)) or 'none'})",
                source="--context",
                fix="pass --context with one of those names, or leave it out for the current-context",
            )

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment for a helm/kubectl child: ``base`` (default ``os.environ``) with ``KUBECONFIG`` set to
        :attr:`path`, so a list is merged by the tool exactly as by our client."""
        return {**(os.environ if base is None else base), "KUBECONFIG": self.path}

    def describe(self) -> str:
        """``<path> (from <source>), context <name or current>`` for messages."""
        return f"{self.path} (from {self.source}), context {self.context or '(current)'}"


def resolve(
    flag: str | os.PathLike | None = None,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> Kubeconfig:
    """The kubeconfig of a run: ``flag`` (``--kubeconfig`` or a cluster handle's kubeconfig; an
    ``os.pathsep`` list is accepted as ``$KUBECONFIG`` takes it), else ``env["KUBECONFIG"]`` (default
    ``os.environ``; empty entries skipped, as kubectl does), else ``home/.kube/config`` (default the user's
    home), with ``context`` (``--context``; None or "" = current-context). Pure: does not read the files
    (a missing file is reported by the client that loads it, naming :meth:`Kubeconfig.describe`)."""
    env = os.environ if env is None else env
    ctx = context or None
    if flag:
        return Kubeconfig(_split(str(flag)), ctx, "--kubeconfig")
    listed = _split(env.get("KUBECONFIG") or "")
    if listed:
        return Kubeconfig(listed, ctx, "$KUBECONFIG")
    return Kubeconfig(((home or Path.home()) / DEFAULT,), ctx, "~/.kube/config")


def of(source: Source, context: str | None = None) -> Kubeconfig:
    """``source`` as a :class:`Kubeconfig`: a resolved one is kept (``context``, when given, replaces its
    context); a path, a list or None goes through :func:`resolve` with ``context``."""
    if isinstance(source, Kubeconfig):
        return dataclasses.replace(source, context=context or source.context)
    return resolve(source, context)


def _split(text: str) -> tuple[Path, ...]:
    return tuple(Path(p).expanduser() for p in text.split(os.pathsep) if p.strip())


def add_options(parser) -> None:
    """Add ``--kubeconfig`` and ``--context`` to an argparse parser (dests ``kubeconfig``, ``context``, default
    None: :func:`resolve` applies the order above), as every command that talks to an existing cluster takes
    them (``preflight``, ``cleanup``, ``list``, ``profile init``)."""
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: its current-context)")
