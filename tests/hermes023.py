"""A test double of Hermes 0.23's memory-provider plugin loading, built only from
/work/shared/hermes/HERMES-0.23.md (upstream plugins/memory/__init__.py and config_schema.py,
plugins/index.md): 0.23 cannot be installed here. Each function names the item it follows.
The real 0.19 loader (plugins.memory) is tested beside it; this covers what 0.23 changed."""
from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from typing import Any, Iterable

import yaml

USER_NAMESPACE = "_hermes_user_memory"  # item 1
SCAN_BYTES = 8192  # item 1: the first 8 KiB of __init__.py
SCHEMA_MAY_IMPORT = "plugins.memory.config_schema"  # item 5
UPPER = re.compile(r"(==|<=|<|~=)\s*[0-9]")  # item 3: a bound from above (~= bounds too)


def is_memory_provider_dir(path: Path) -> bool:
    """Item 1 (`_is_memory_provider_dir`): __init__.py names register_memory_provider or
    MemoryProvider in its first 8 KiB."""
    init = Path(path) / "__init__.py"
    if not init.is_file():
        return False
    head = init.read_text(errors="replace")[:SCAN_BYTES]
    return "register_memory_provider" in head or "MemoryProvider" in head


def provider_dirs(bundled: Iterable[Path] = (), user: Iterable[Path] = (), project: Iterable[Path] = (),
                  entry_points: Iterable[tuple[str, Path]] = ()) -> dict[str, tuple[str, Path]]:
    """Item 1 (`_iter_provider_dirs`, `find_provider_dir`): name -> (source, directory), the
    first seen winning in the clash order bundled > user > project > entry point. Item 2: an
    entry point is only discovered (its package directory), never installed."""
    found: dict[str, tuple[str, Path]] = {}
    for source, dirs in (("bundled", bundled), ("user", user), ("project", project)):
        for path in dirs:
            if is_memory_provider_dir(path):
                found.setdefault(Path(path).name, (source, Path(path)))
    for name, path in entry_points:
        found.setdefault(name, ("entry point", Path(path)))
    return found


class PluginContext:
    """Item 4: register_* calls other than register_memory_provider reach a real context,
    which records them (tools, hooks, skills, register_auxiliary_task, ...)."""

    def __init__(self) -> None:
        self.provider = None
        self.calls: list[tuple[str, tuple, dict]] = []

    def register_memory_provider(self, provider: Any) -> None:
        self.provider = provider

    def __getattr__(self, name: str):
        if not name.startswith("register_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


def import_plugin(provider_dir: Path):
    """Item 1 (`_load_provider_from_dir`): import a user plugin's __init__.py as
    `_hermes_user_memory.<name>` (a synthetic parent, the directory as the package's search
    path: relative imports work, absolute imports of its siblings do not). This bare import is
    also what `hermes plugins validate` does (item 6)."""
    provider_dir = Path(provider_dir)
    if USER_NAMESPACE not in sys.modules:
        spec = importlib.machinery.ModuleSpec(USER_NAMESPACE, None, is_package=True)
        spec.submodule_search_locations = []
        sys.modules[USER_NAMESPACE] = importlib.util.module_from_spec(spec)
    name = f"{USER_NAMESPACE}.{provider_dir.name}"
    spec = importlib.util.spec_from_file_location(name, provider_dir / "__init__.py",
                                                  submodule_search_locations=[str(provider_dir)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def load_provider(provider_dir: Path) -> tuple[Any, PluginContext]:
    """Item 1 then item 4: the imported plugin's register(ctx) with a real context; the
    provider it registered, and the context (what else it registered)."""
    ctx = PluginContext()
    import_plugin(provider_dir).register(ctx)
    if ctx.provider is None:
        raise LookupError(f"{provider_dir} registered no memory provider")
    return ctx.provider, ctx


def config_schema(provider_dir: Path):
    """Item 5 (`get_provider_config_schema`): config_schema.py loaded by its path; it may import
    only plugins.memory.config_schema (anything else raises ImportError here). CONFIG_SCHEMA."""
    path = Path(provider_dir) / "config_schema.py"
    real_import = builtins.__import__
    spec = importlib.util.spec_from_file_location(f"_hermes_memory_config_schema.{Path(provider_dir).name}", path)
    module = importlib.util.module_from_spec(spec)

    def guarded(name, globals=None, locals=None, fromlist=(), level=0):
        ours = globals is module.__dict__  # an import in config_schema.py itself
        if ours and (level or name not in (SCHEMA_MAY_IMPORT, "__future__")):
            raise ImportError(f"config_schema.py may import only {SCHEMA_MAY_IMPORT}, not {name}")
        return real_import(name, globals, locals, fromlist, level)

    builtins.__import__ = guarded
    try:
        spec.loader.exec_module(module)
    finally:
        builtins.__import__ = real_import
    return getattr(module, "CONFIG_SCHEMA", None)


def declared_dependencies(plugin_dir: Path) -> list[str]:
    """Item 3: the dependencies of pyproject.toml beside plugin.yaml, which beat plugin.yaml's
    python_dependencies / pip_dependencies."""
    pyproject = Path(plugin_dir) / "pyproject.toml"
    if pyproject.is_file():
        return list(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"].get("dependencies", []))
    manifest = yaml.safe_load((Path(plugin_dir) / "plugin.yaml").read_text(encoding="utf-8")) or {}
    return list(manifest.get("python_dependencies") or manifest.get("pip_dependencies") or [])


def dependency_problems(plugin_dir: Path) -> list[str]:
    """Item 3 ("Dependency security policy"): every declared dependency upper-bounded; one
    exempt from the 14-day quarantine (`fresh`) only as an exact == pin with
    [tool.uv.exclude-newer-package] <name> = false. What `hermes plugins validate` would refuse."""
    from packaging.requirements import Requirement

    pyproject = Path(plugin_dir) / "pyproject.toml"
    exempt = {}
    if pyproject.is_file():
        exempt = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("uv", {}).get(
            "exclude-newer-package", {})
    problems = []
    for line in declared_dependencies(plugin_dir):
        req = Requirement(line)
        if req.url or not UPPER.search(str(req.specifier)):
            problems.append(f"{req.name}: no upper bound")
        elif req.name in exempt and (exempt[req.name] is not False or not str(req.specifier).startswith("==")):
            problems.append(f"{req.name}: a quarantine exemption needs an exact == pin and `= false`")
    return problems


def fresh_release_admitted(plugin_dir: Path, name: str) -> bool:
    """Item 3: whether a release of `name` younger than 14 days would be installed."""
    pyproject = Path(plugin_dir) / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text(encoding="utf-8")) if pyproject.is_file() else {}
    exempt = data.get("tool", {}).get("uv", {}).get("exclude-newer-package", {})
    pinned = any(line.replace(" ", "").startswith(f"{name}==") for line in declared_dependencies(plugin_dir))
    return pinned and exempt.get(name) is False


def load_catalog_entry(path: Path) -> dict:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def catalog_problems(entry: dict, taken: Iterable[str] = ()) -> list[str]:
    """Item 7 (plugin-catalog/README.md rules 2, 6, 9, 13, 14 and "Names"; hindsight.yaml):
    a unique provider name, a full 40-hex SHA pin, a SemVer `requires_hermes` floor, declared
    capabilities, network use and background work disclosed."""
    problems = []
    if not entry.get("name") or entry["name"] in set(taken):
        problems.append("name: missing or taken")
    if not re.fullmatch(r"[0-9a-f]{40}", str(entry.get("commit", ""))):
        problems.append("commit: not a full SHA")
    if not re.fullmatch(r">=\s*\d+\.\d+\.\d+", str(entry.get("requires_hermes", ""))):
        problems.append("requires_hermes: not a SemVer floor (>=X.Y.Z)")
    if entry.get("category") != "memory":
        problems.append("category: not memory")
    if not entry.get("repository", "").startswith("https://"):
        problems.append("repository: not an https URL")
    if not isinstance(entry.get("capabilities"), list) or not entry["capabilities"]:
        problems.append("capabilities: none declared")
    disclosure = str(entry.get("disclosure", "")).lower()
    if "network" not in disclosure or "background" not in disclosure:
        problems.append("disclosure: network use and background work not both disclosed")
    return problems
