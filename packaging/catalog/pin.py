"""Print the catalog entry (cmms.yaml beside this file) with its repository and full SHA pin.

    python packaging/catalog/pin.py --repository https://github.com/OWNER/hermes-cmms [--commit SHA]

The commit defaults to this checkout's HEAD; it must hold install/templates/plugin/ and be pushed
to the repository before the entry is submitted.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def pinned(repository: str, commit: str) -> str:
    """cmms.yaml with REPOSITORY and PIN filled in; ValueError for a bad URL or SHA."""
    if not re.fullmatch(r"https://[^\s/]+/\S+", repository):
        raise ValueError(f"The repository must be an https URL, not {repository!r}.")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise ValueError(f"The pin must be a full 40-character commit SHA, not {commit!r}.")
    text = (HERE / "cmms.yaml").read_text(encoding="utf-8")
    return text.replace("repository: REPOSITORY", f"repository: {repository}").replace("commit: PIN", f"commit: {commit}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repository", required=True)
    parser.add_argument("--commit", help="default: this checkout's HEAD")
    args = parser.parse_args(argv)
    commit = args.commit or subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True,
                                           text=True, check=True).stdout.strip()
    try:
        sys.stdout.write(pinned(args.repository, commit))
    except ValueError as exc:
        print(f"pin.py: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
