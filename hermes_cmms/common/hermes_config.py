"""Round-trip edits of $HERMES_HOME/config.yaml that keep the user's comments and keys."""
from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import Callable

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from .errors import InvalidInput


def _yaml() -> YAML:
    yaml = YAML()  # round-trip mode
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def read(home: Path) -> CommentedMap:
    path = Path(home) / "config.yaml"
    if not path.exists():
        return CommentedMap()
    try:
        data = _yaml().load(path.read_text(encoding="utf-8"))
    except Exception as exc:  # ruamel raises many parser error types
        mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
        where = f" ({problem} at line {mark.line + 1})" if mark is not None and problem else ""
        raise InvalidInput(f"{path} is not valid YAML{where}.") from exc
    if data is None:
        return CommentedMap()
    if not isinstance(data, CommentedMap):
        raise InvalidInput(f"{path} does not hold a YAML mapping at the top level.")
    return data


def render(data: CommentedMap) -> str:
    out = io.StringIO()
    _yaml().dump(data, out)
    return out.getvalue()


def edit(home: Path, change: Callable[[CommentedMap], None], dry_run: bool = False) -> bool:
    """Apply `change` to config.yaml; write atomically if it changed anything. True if changed."""
    path = Path(home) / "config.yaml"
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    data = read(home)
    change(data)
    after = render(data)
    if after == before or (not before and not data):
        return False
    if not dry_run:
        _write(path, after, keep_mode=bool(before))
    return True


def _write(path: Path, text: str, keep_mode: bool) -> None:
    """Write `text` to `path` whole: beside it, then renamed over it. A symlinked config.yaml (a
    dotfiles repository) stays a link: the file it names is replaced. One bind-mounted into a
    container cannot be renamed over (EBUSY): it is written in place, as Hermes does."""
    real = Path(os.path.realpath(path))
    real.parent.mkdir(parents=True, exist_ok=True)
    tmp = real.with_name(real.name + ".cmms-tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        if keep_mode:
            os.chmod(tmp, real.stat().st_mode & 0o7777)  # keep e.g. Hermes' 0600
        os.replace(tmp, real)
    except OSError as exc:
        if exc.errno not in (errno.EBUSY, errno.EXDEV):
            raise
        real.write_text(text, encoding="utf-8")
    finally:
        tmp.unlink(missing_ok=True)


def section(data: CommentedMap, *keys: str) -> CommentedMap:
    """The mapping at data[k1][k2]..., created when missing."""
    node = data
    for key in keys:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = CommentedMap()
        node = child
    return node
