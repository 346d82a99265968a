#!/usr/bin/env python3
"""Install a baseline memory provider into a Hermes home, where Hermes' loader finds it:
copies benchmarks/baselines/<name>/ and rawlines.py to $HERMES_HOME/plugins/<name>/.

    python benchmarks/baselines/install.py rawbm25 --hermes-home "$HERMES_HOME"

It does not touch config.yaml: select the provider with `memory.provider: <name>` to use it in
Hermes, or pass `--provider <name>` to the recall harness, which loads it by name."""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAMES = ("rawbm25", "rawhybrid", "rawbge")


def install(name: str, home: Path) -> Path:
    dest = home / "plugins" / name
    dest.mkdir(parents=True, exist_ok=True)
    for src in [HERE / name / "__init__.py", HERE / name / "plugin.yaml", HERE / "rawlines.py"]:
        shutil.copyfile(src, dest / src.name)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", choices=NAMES)
    ap.add_argument("--hermes-home", default=os.environ.get("HERMES_HOME") or str(Path.home() / ".hermes"))
    args = ap.parse_args()
    print(f"installed {args.name} in {install(args.name, Path(args.hermes_home))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
