"""Generates Python code from protos/ (`make protos`), or checks the committed code (`--check`)."""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import io
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def generate(proto_root: Path, out: Path) -> list[Path]:
    """Runs protoc with the grpc and mypy plugins over every .proto below proto_root."""
    protos = sorted(proto_root.rglob("*.proto"))
    include = str(Path(protoc.__file__).parent / "_proto")
    for proto in protos:
        args = [
            "protoc",
            f"-I{proto_root}",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            f"--mypy_out={out}",
            f"--mypy_grpc_out={out}",
            str(proto.relative_to(proto_root)),
        ]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            status = protoc.main(args)
        if status != 0:
            raise SystemExit(f"protoc failed on {proto}")
    return protos


def generated_files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*") if p.name.endswith(GENERATED_SUFFIXES)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("proto_root", type=Path)
    parser.add_argument("--check", action="store_true", help="fail when committed code differs")
    args = parser.parse_args()
    root: Path = args.proto_root
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        generate(root, out)
        fresh, committed = generated_files(out), generated_files(root)
        if args.check:
            stale = sorted(str(p) for p in fresh ^ committed)
            stale += sorted(
                str(p)
                for p in fresh & committed
                if not filecmp.cmp(out / p, root / p, shallow=False)
            )
            if stale:
                print("generated proto code is out of date; run `make protos`:", *stale, sep="\n  ")
                return 1
            print(f"generated proto code is up to date ({len(fresh)} files)")
            return 0
        for old in committed - fresh:
            (root / old).unlink()
        for rel in fresh:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / rel, root / rel)
        for rel in fresh:
            # storypost/ itself stays a namespace package; every level below it is a package.
            for parent in list(rel.parents)[:-2]:
                (root / parent / "__init__.py").touch()
        print(f"generated {len(fresh)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
