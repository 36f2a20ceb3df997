"""Generate Python gRPC stubs from the project's own .proto files with grpcio-tools.

Every ``*.proto`` under ``reference_driver/`` and ``conformance/`` is compiled next to itself. Generated
modules import their siblings as top-level modules (``import x_pb2``); we rewrite those imports to
package-relative ones so two packages can each have their own stubs. Proto file names must be unique
across the repository: protobuf registers files by name in one descriptor pool, so two files both named
``api.proto`` would collide at import time.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]  # holds conformance/ and reference_driver/

ROOTS = ("reference_driver", "conformance")


def proto_files() -> list[Path]:
    """All .proto files of the project, sorted."""
    return sorted(p for root in ROOTS for p in (REPO_ROOT / root).rglob("*.proto"))


def _up_to_date(proto: Path) -> bool:
    outs = [proto.with_name(proto.stem + "_pb2.py"), proto.with_name(proto.stem + "_pb2_grpc.py")]
    return all(o.exists() and o.stat().st_mtime >= proto.stat().st_mtime for o in outs)


def generate_all(force: bool = False) -> int:
    """Compile every proto file whose stubs are missing or stale; return how many files exist.

    Raises RuntimeError naming the .proto file when protoc reports an error, or ValueError when two files
    share a name.
    """
    from grpc_tools import protoc  # noqa: PLC0415 - only inside the venv

    files = proto_files()
    names = [p.name for p in files]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"proto file names must be unique across the repo; duplicated: {sorted(dupes)}")
    siblings = {p.stem for p in files}
    for proto in files:
        if not force and _up_to_date(proto):
            continue
        include = Path(protoc.__file__).parent / "_proto"
        rc = protoc.main(
            [
                "protoc",
                f"-I{proto.parent}",
                f"-I{include}",
                f"--python_out={proto.parent}",
                f"--pyi_out={proto.parent}",
                f"--grpc_python_out={proto.parent}",
                str(proto),
            ]
        )
        if rc != 0:
            raise RuntimeError(f"protoc failed for {proto.relative_to(REPO_ROOT)} (exit {rc})")
        for gen in (proto.with_name(proto.stem + "_pb2.py"), proto.with_name(proto.stem + "_pb2_grpc.py")):
            text = gen.read_text()
            for stem in siblings:
                text = re.sub(rf"^import {stem}_pb2 as", f"from . import {stem}_pb2 as", text, flags=re.M)
            gen.write_text(text)
    return len(files)


if __name__ == "__main__":  # python -m conformance.protos (make test, make setup)
    print(f"{generate_all()} proto files")
