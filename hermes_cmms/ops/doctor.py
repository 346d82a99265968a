"""`hermes-cmms doctor`: one line per check, each ok / warn / FAIL."""
from __future__ import annotations

import shlex
from typing import Iterator, Optional

from ..common.config import Settings, hermes_home

Check = tuple[str, str, str]


def run_checks(home_arg=None) -> Iterator[Check]:
    home = hermes_home(home_arg)
    yield _hermes()
    yield _plugin_files(home)
    yield _active(home)
    try:
        settings = Settings.load(home)
    except Exception as exc:  # noqa: BLE001 - report, don't crash
        yield ("FAIL", "settings", str(exc))
        return
    yield ("ok", "settings", f"embedder={settings.embedder} embedder_dtype={settings.embedder_dtype} "
                                  f"recall_tokens={settings.recall_tokens}")
    yield _embedder(settings)
    yield _tokenizer()
    yield _writable(settings)
    missing = _missing(settings)
    if missing:  # no store: none is made (a typo in the home)
        yield missing
        return
    database, identity, index = _database(settings)
    yield database
    yield from index
    yield from _vectors(settings, *(identity or (None, None)))


def engine_checks(settings: Settings, embedder: Check, store) -> Iterator[Check]:
    """The checks of `doctor` for an engine that is running: `embedder` says what it has loaded
    (not loaded again here), and its open `store` is checked instead of opening another, without
    the integrity check (it reads every page: `doctor` runs it)."""
    yield _hermes()
    yield _plugin_files(settings.home)
    yield _active(settings.home)
    yield ("ok", "settings", f"embedder={settings.embedder} embedder_dtype={settings.embedder_dtype} "
                             f"recall_tokens={settings.recall_tokens}")
    yield embedder
    yield _tokenizer()
    yield _writable(settings)
    check = _store_check(settings, store, integrity=False)
    yield check
    yield from _index_files(settings, store) if check[0] == "ok" else ()
    yield from _vectors(settings, *((check[0] == "ok" and _identity(store)) or (None, None)))


def _hermes() -> Check:
    try:
        from importlib.metadata import version

        import agent.memory_provider  # noqa: F401
        return ("ok", "hermes", f"hermes-agent {version('hermes-agent')}")
    except Exception as exc:  # noqa: BLE001
        return ("FAIL", "hermes", f"hermes-agent is not importable ({exc}); pip install 'hermes-cmms[hermes]'")


def _plugin_files(home, hermes_version: Optional[str] = None) -> Check:
    """Hermes 0.19 finds cmms through the shim in $HERMES_HOME/plugins/cmms/; 0.20+ through the
    `hermes_agent.memory_providers` entry point this package declares, with or without it."""
    plugin = home / "plugins" / "cmms"
    missing = [n for n in ("__init__.py", "plugin.yaml") if not (plugin / n).exists()]
    if missing and _reads_entry_points(hermes_version or _hermes_version()) and _entry_point():
        return ("ok", "plugin files", "none needed: Hermes finds cmms through the "
                "hermes_agent.memory_providers entry point")
    if missing:
        return ("FAIL", "plugin files", f"{_why_missing(home, plugin, missing)}; run `hermes-cmms "
                f"install-hermes-plugin --hermes-home {shlex.quote(str(home))}`")
    return ("ok", "plugin files", str(plugin))


def _why_missing(home, plugin, missing: list[str]) -> str:
    """What the missing shim means: in a named profile, most likely one `hermes profile create
    --clone` made, which copies config.yaml (memory.provider: cmms) but not plugins/."""
    from ..common.scopes import profile_name

    profile = profile_name(home)
    if profile in ("default", "custom") or missing != ["__init__.py", "plugin.yaml"]:
        return f"missing {', '.join(missing)} in {plugin}"
    return (f"memory is off in the Hermes profile {profile!r}: Hermes 0.19 loads cmms from {plugin}, which this "
            "profile lacks (`hermes profile create --clone` copies config.yaml, not plugins/)")


def _hermes_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hermes-agent")
    except PackageNotFoundError:
        return "0"


def _reads_entry_points(hermes_version: str) -> bool:
    """Hermes 0.20 and later load memory providers from entry points."""
    parts = [int(p) if p.isdigit() else 0 for p in hermes_version.split(".")[:2]] + [0, 0]
    return tuple(parts[:2]) >= (0, 20)


def _entry_point() -> bool:
    from importlib.metadata import entry_points

    return any(ep.name == "cmms" for ep in entry_points(group="hermes_agent.memory_providers"))


def _active(home) -> Check:
    from ..common import hermes_config

    try:
        provider = (hermes_config.read(home).get("memory") or {}).get("provider")
    except Exception as exc:  # noqa: BLE001
        return ("FAIL", "config", str(exc))
    if provider != "cmms":
        return ("FAIL", "config", f"memory.provider is {provider!r}, not 'cmms', in {home / 'config.yaml'}")
    return ("ok", "config", "memory.provider: cmms")


def _embedder(settings: Settings) -> Check:
    """The embedder the settings name, found on disk, not loaded (a third of a second saved)."""
    from ..vectors.embedders import embedder_on_disk

    level, detail = embedder_on_disk(settings.embedder, settings.embedder_dtype)
    return (level, "embedder", detail)


def _tokenizer() -> Check:
    """The token counter's encoding, its file checked, not loaded (a third of a second saved)."""
    from ..common import tokens

    try:
        return ("ok", "tokenizer", tokens.on_disk())
    except Exception as exc:  # noqa: BLE001
        return ("FAIL", "tokenizer", f"tiktoken cl100k_base unavailable offline: {exc}")


def _missing(settings: Settings) -> Optional[Check]:
    """None when the store is there (its SQLite file, or a database server's); else what that
    means: a Hermes home makes it at its first chat with cmms, any other directory is a typo."""
    from ..common.config import used_by_hermes
    from ..store.availability import store_file

    where = store_file(settings)
    if where is None or where.exists():
        return None
    if used_by_hermes(settings.home):
        return ("warn", "database", f"no cmms store at {where} yet: Hermes makes it at its first chat with cmms")
    return ("FAIL", "database", f"no cmms store at {where}, and {settings.home} is not a Hermes home; "
                                "check --hermes-home or $HERMES_HOME")


def _writable(settings: Settings) -> Check:
    from ..store.availability import store_problem

    problem = store_problem(settings)
    if problem:
        return ("FAIL", "writable", f"{problem} Hermes will not use cmms until this is fixed.")
    return ("ok", "writable", str(settings.data_dir) if settings.database_url.startswith("sqlite")
            else "a database server (checked below)")


def _database(settings: Settings) -> tuple[Check, Optional[tuple[str, str]], list[Check]]:
    """The database's line, the store's id and where it lives (None if they could not be read)
    and the embedded vector index's line (if any: _index_files)."""
    from ..store.store import Store

    try:
        store = Store(settings.database_url)
    except Exception as exc:  # noqa: BLE001
        return ("FAIL", "database", str(exc)), None, []
    try:
        check = _store_check(settings, store)
        if check[0] != "ok":
            return check, None, []
        return check, _identity(store), _index_files(settings, store)
    finally:
        store.close()


def _index_files(settings: Settings, store) -> list[Check]:
    """The embedded vector index read from its files (ops/_index_files), never opened nor made."""
    from ._index_files import embedded_index

    try:
        found = embedded_index(settings, store)
    except Exception as exc:  # noqa: BLE001 - a finding, not a crash
        found = ("FAIL", "vectors", f"the vector index at {settings.chroma_path} could not be read: "
                 f"{type(exc).__name__}: {exc}")
    return [found] if found else []


def _store_check(settings: Settings, store, integrity: bool = True) -> Check:
    from ..store.store import safe_url

    try:
        result, counts = store.integrity() if integrity else "ok", store.counts()
    except Exception as exc:  # noqa: BLE001
        return ("FAIL", "database", str(exc))
    if result != "ok":
        return ("FAIL", "database", f"integrity check: {result}")
    return ("ok", "database", f"{safe_url(settings.database_url)} ({counts['memories']} memories, "
            f"{counts['outbox']} waiting to be indexed)")


def _vectors(settings: Settings, identity: Optional[str], home: Optional[str]) -> Iterator[Check]:
    """A Chroma server (the embedded index needs no line), read only: whether it answers, whether
    its database is this store's (`identity`; None: the store could not be read, said above)
    and not a copy's of it living elsewhere (`home`: Store.location),
    and its collections in a layout from before `chroma_buckets`, whose vectors recall misses
    until `reindex` moves them."""
    if not settings.chroma_url or settings.embedder == "none" or identity is None:
        return
    from ..vectors.chroma import copied, foreign, probe, same_location

    url, layout = settings.chroma_url, f"{settings.chroma_buckets} buckets a view"
    degraded = "recall is keyword-only and writes wait in the outbox until"
    try:
        found = probe(url, settings.chroma_buckets)
    except Exception as exc:  # noqa: BLE001 - a server refusing is a finding, not a crash
        said = (str(exc).splitlines() or [type(exc).__name__])[0][:200].rstrip(".")
        yield ("warn", "vectors", f"the Chroma server at {url} refused: {said}; {degraded} it answers.")
        return
    if not found["answers"]:
        yield ("warn", "vectors", f"the Chroma server at {url} does not answer ({found['error']}); "
               f"{degraded} it does.")
    elif found["owner"] not in (None, identity):
        yield ("FAIL", "vectors", f"{foreign(url, found['owner'], identity)} Meanwhile {degraded} then.")
    elif found["owner"] is not None and found.get("at") is not None and not same_location(found["at"], home):
        yield ("FAIL", "vectors", f"{copied(url, found['at'], home)} Meanwhile {degraded} then.")
    elif found["old"]:
        kinds = "; ".join(f"{n} collections in {kind}" for kind, n in found["old"].items())
        yield ("warn", "vectors", f"{url}: {kinds}, a layout before this one ({layout}): recall misses their "
               "vectors until `hermes-cmms reindex` moves them (nothing is embedded again).")
    else:
        yield ("ok", "vectors", f"{url} ({layout}{'' if found['database'] else '; its database is made at the first write'})")


def _identity(store) -> Optional[tuple[str, str]]:
    """The store's id (Store.identity) and where it lives (Store.location), None if they cannot
    be read now."""
    try:
        return store.identity(), store.location()
    except Exception:  # noqa: BLE001 - the database line says what is wrong
        return None
