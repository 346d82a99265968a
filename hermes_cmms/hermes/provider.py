"""The Hermes MemoryProvider `cmms`: a thin door from Hermes' lifecycle to the engine.

Importing this module and constructing the provider (what Hermes' start-up and `hermes plugins
validate` do) load no engine: hermes_cmms.service, and with it SQLAlchemy, SQLModel, Chroma and
the embedder, is imported by the first hook that needs it (initialize, or a flush).
"""
from __future__ import annotations

import importlib
import json
import logging
import threading
import time
from concurrent.futures import Future, TimeoutError as Late
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

from agent.memory_provider import MemoryProvider

from ..common.config import Settings
from ..common.errors import CmmsError, StoreUnavailable
from ..common.scopes import LOCAL_PLATFORMS, scope_for  # (re-exported: the door's users name them here)
from ..common.text import brief, clean_key
from . import setup as cmms_setup, turns
from .host import (HOST_SAYS_UNAVAILABLE, HOST_SHOWS_RECALL, RecallStatus, host_threads, is_trivial_prompt,
                   prefetch_timeout, quiet_stderr)
from .tools import TOOL_SCHEMAS, call_tool

log = logging.getLogger(__name__)
_said: set[str] = set()  # unavailability reasons already logged by this process

FIRST_TURN_WAIT_S = 2.0  # the recall on_turn_start begins waits this long for a model still loading,
# then (the search's own 1 s wait past) goes keyword-only; prefetch waits for it that long + COLLECT_S
COLLECT_S = 1.5


class _Facade:
    """hermes_cmms.service, imported at the first attribute read instead of with this module."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module("..service", __package__), name)


engine = _Facade()


def _conversation(kwargs: Dict[str, Any], session_id: str) -> Optional[str]:
    """What identifies a conversation when the platform names no user: the gateway's stable
    session key (api_server: the X-Hermes-Session-Key header), else the chat, else the session."""
    for name in ("gateway_session_key", "chat_id"):
        if kwargs.get(name):
            return str(kwargs[name])
    return session_id or None


def _profile(kwargs: dict) -> Optional[str]:
    """The profile this agent runs in: what Hermes says (`agent_identity`); for the owner at a
    host that does not say, the profile its home is, so the owner's scope is the one every
    door defaults to (common.scopes.local_scope)."""
    said = kwargs.get("agent_identity")
    if said or kwargs.get("user_id") or (kwargs.get("platform") or "cli") not in LOCAL_PLATFORMS:
        return said
    from ..common.config import hermes_home
    from ..common.scopes import profile_name

    return profile_name(hermes_home(kwargs.get("hermes_home")))


class CmmsMemoryProvider(MemoryProvider):
    """Composite Memory: every turn retained, relevant memories recalled before each turn."""

    name = "cmms"
    pre_compress_checkpoint_api_version = 2  # Hermes 0.23: on_pre_compress saves the turns or raises

    def __init__(self) -> None:
        self.service: Optional[engine.MemoryService] = None
        self.settings: Optional[Settings] = None
        self.scope = scope_for(None, None, None)
        self.session_id = ""
        self.platform = "cli"
        self.primary = True
        self._early: Optional[tuple[str, Future]] = None  # (message, its recall) begun by on_turn_start
        self._author: Optional[tuple[str, Optional[dict], str]] = None  # (message, author, client) of the turn
        self._seen: set[str] = set()  # memory ids injected by turns this session completed
        self._pending: set[str] = set()  # ids injected into the turn in progress
        self._lock = threading.Lock()
        self._mirror = None  # the process's mirror of MEMORY.md / USER.md, while this one uses it
        self._failure = ""  # why initialize could not open the store, said by every later write
        self._refused = False  # a write of this provider failed: the end of its session is tried too
        self._recalled: Optional[int] = None  # memories the last prefetch injected (None: none ran)
        self._say = None  # Hermes 0.19 CLI's status line (status_callback), where it has no recall line
        self._warn = None  # Hermes' warning line for the person at the chat (warning_callback: 0.19's CLI)
        self._told: set[str] = set()  # what this provider said on it already
        self._quiet = None  # the process's stderr when Hermes ran this session with its own muted (`-z`)

    # -- setup ----------------------------------------------------------------------------

    def is_available(self) -> bool:
        """Whether the store can be written here (a local check: no network, no key). Where it
        cannot, Hermes 0.20+ shows unavailable_reason(); 0.19 would drop the provider without a
        word to the person at the chat, so there cmms loads anyway and says itself that memory is
        off (initialize, system_prompt_block, every tool result)."""
        reason = self.unavailable_reason()
        if reason and reason not in _said:
            _said.add(reason)
            log.warning("cmms memory is unavailable: %s", reason)
        return not reason or not HOST_SAYS_UNAVAILABLE

    def unavailable_reason(self) -> str:
        """Why cmms cannot work in this Hermes home, in one sentence ('' when it can); Hermes
        0.20+ shows it when `is_available()` is False."""
        from ..service import store_problem

        try:
            return store_problem(Settings.load())
        except CmmsError as exc:
            return str(exc)

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self.initialize_for_inspection(session_id, **kwargs)
        self._say = None if HOST_SHOWS_RECALL else kwargs.get("status_callback")
        self._warn = kwargs.get("warning_callback")
        self._quiet = quiet_stderr()  # (at the start: a tool call mutes stderr for a moment, `-z` for the run)
        try:
            self.settings = replace(Settings.load(kwargs.get("hermes_home")), threads=host_threads(self))
            self.service = engine.acquire(_writable(self.settings))
        except Exception as exc:
            self._failure = brief(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            self._tell(f"cmms memory is off, so nothing of this session will be remembered: {self._failure}")
            raise
        self._failure = ""
        engine.hosted_by_hermes(self.service)  # Hermes' model for route, and for consolidation when set so
        if self.primary and self.settings.mirror == "on" and self._mirror is None:
            self._start_mirror()

    def initialize_for_inspection(self, session_id: str, **kwargs: Any) -> None:
        """Who this agent is, for `system_prompt_block()` / `get_tool_schemas()` (Hermes 0.20+
        inspects a provider this way): no store opened, no thread started, nothing loaded."""
        self.session_id = session_id or ""
        self.platform = kwargs.get("platform") or "cli"
        self.scope = scope_for(self.platform, kwargs.get("user_id"), _profile(kwargs),
                               _conversation(kwargs, self.session_id))
        self.primary = kwargs.get("agent_context", "primary") == "primary"

    def _start_mirror(self) -> None:
        """Mirror the profile's MEMORY.md / USER.md (and the inbox) into the profile's scope,
        local:<profile>: they belong to the profile, not to one gateway user."""
        from . import mirror
        from ..common.scopes import local_scope

        inbox = Path(self.settings.inbox).expanduser() if self.settings.inbox else None
        try:
            self._mirror = mirror.acquire(self.service, self.settings.home, local_scope(self.settings.home), inbox,
                                          self.settings.threads)
        except Exception as exc:  # noqa: BLE001 - memory works without the mirror
            log.warning("cmms: not mirroring the memory files: %s", exc)

    def _tell(self, message: str) -> None:
        """Say `message` once on Hermes' warning line for the person at the chat, where Hermes
        gives one (0.19's CLI), or on standard error where Hermes sends its own to the null
        device (`hermes -z`: the reply alone is on standard output); the model hears of a store
        that did not open in the prompt block. (0.19's gateway gives a provider no line to the
        chat: there Hermes and cmms log it as a WARNING, and the model is asked to say it.) Whether
        Hermes mutes its standard error is read when the session starts: a tool call that mutes it
        for a moment (code_execution_tool) does not take the warning line's place."""
        quiet = self._quiet
        if (self._warn is None and quiet is None) or message in self._told:
            return
        self._told.add(message)
        try:
            if quiet is not None:
                quiet.write(f"{message}\n")
                quiet.flush()
            else:
                self._warn(message)
        except Exception:  # a warning line never breaks a turn
            log.debug("cmms: the warning line failed", exc_info=True)

    def get_tool_schemas(self) -> List[Dict[str, Any]]:
        return [dict(schema) for schema in TOOL_SCHEMAS]

    def system_prompt_block(self) -> str:
        if self._failure:
            return (f"Long-term memory (cmms) is OFF in this session: {self._failure} Nothing said here "
                    "is stored or recalled. Tell the user so in one short sentence at the start of your "
                    "first reply, and again whenever they ask you to remember something.")
        return ("Long-term memory (cmms) is on: relevant memories from earlier sessions are "
                "added to user messages inside <memory-context>. Use cmms_recall to search "
                "memory, cmms_remember to store a fact, cmms_forget to delete one, cmms_belief to "
                "record a judgement, cmms_graph to see how people and things are related.")

    # -- recall ---------------------------------------------------------------------------

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        self._recalled = None
        if self.service is None or is_trivial_prompt(query):  # "ok", "thanks", /commands: no recall
            return ""
        started = time.monotonic()
        with self._lock:
            early, self._early = self._early, None
        text, injected = self._collect(early, query)
        if time.monotonic() - started > prefetch_timeout():  # Hermes went on without this block,
            log.info("cmms: recall outlasted Hermes' prefetch timeout; nothing was injected")
            return text  # so none of it is in front of the model: nothing to count or announce
        with self._lock:
            self._pending = injected  # part of the conversation once the turn completes
        self._recalled = len(injected) if text else 0
        self._announce(self._recalled)
        return text

    def recall_status(self) -> Optional[RecallStatus]:
        """What the last prefetch injected, for Hermes 0.20+'s "🧠 recalled N memories" line
        (None when it injected nothing)."""
        return RecallStatus("cmms", self._recalled) if self._recalled else None

    def _announce(self, count: int) -> None:
        """On Hermes 0.19's CLI, which shows no recall line of its own, say it on the status line."""
        if count and self._say is not None:
            try:
                self._say(f"🧠 cmms recalled {count} memor{'y' if count == 1 else 'ies'}")
            except Exception:  # a status line never breaks a turn
                log.debug("cmms: status_callback failed", exc_info=True)

    def _begin(self, message: str) -> None:
        """Begin the turn's recall on a thread of its own (on_turn_start): in a fresh process it
        waits for the model up to FIRST_TURN_WAIT_S, while Hermes goes on; prefetch collects it."""
        if self.service is None or is_trivial_prompt(message):
            return
        future: Future = Future()

        def run() -> None:
            try:
                self.service.upkeep.wait_vectors(min(FIRST_TURN_WAIT_S, prefetch_timeout() / 4))
                future.set_result(self._recall(message))
            except BaseException as exc:  # noqa: BLE001 - handed to prefetch, which searches again
                future.set_exception(exc)

        with self._lock:
            self._early = (message, future)
        try:
            self.settings.threads.start(run, "cmms-turn-recall")
        except Exception as exc:  # noqa: BLE001 - prefetch searches itself
            future.set_exception(exc)

    def _collect(self, early: Optional[tuple[str, Future]], query: str) -> tuple[str, set[str]]:
        """The recall on_turn_start began for `query`, once done (a bounded wait); else a recall
        now, keyword-only while the model is still loading."""
        if early is not None and early[0] == query:
            try:
                return early[1].result(min(FIRST_TURN_WAIT_S, prefetch_timeout() / 4) + COLLECT_S)
            except Late:
                log.info("cmms: the turn's early recall is late; recalling again")
            except Exception as exc:  # noqa: BLE001 - recall failures never break a turn
                log.debug("cmms: the turn's early recall failed: %s", exc)
        return self._recall(query)

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        """Nothing: Hermes asks ahead, after a turn, with that turn's own message, for a next turn
        that may never come. A block made then would serve only a next prompt identical to it, and
        miss what was stored since; each turn's recall begins at on_turn_start (or prefetch) with
        its own prompt instead, so no search runs for nothing and history holds only what turns got."""

    def _recall(self, query: str, skip_injected: bool = True, kind: str = "turn") -> tuple[str, set[str]]:
        """Recall text for `query` that repeats nothing already injected, and the ids it adds.

        Hermes re-sends every earlier <memory-context> block with each turn, so a memory
        injected into a completed turn of this session is already in front of the model.
        """
        with self._lock:
            seen = set(self._seen) if skip_injected else set()
        before = set(seen)
        try:
            text = self.service.recall(self.scope, query, session_id=self.session_id, seen=seen, kind=kind)
        except Exception as exc:  # noqa: BLE001 - recall failures never break a turn
            log.warning("cmms recall failed: %s", exc)
            return "", set()
        return text, seen - before

    def on_pre_compress(self, messages: List[Dict[str, Any]], *, require_checkpoint: bool = False,
                        **kwargs: Any) -> str:
        """Before Hermes compacts the conversation: save its user/assistant turns (checkpoint v2:
        idempotent; raises when they cannot be saved, so a compaction that requires the
        checkpoint fails closed), then return what memory recalls for the last user message
        (0.19 puts it in the summary's prompt)."""
        said = turns.evidence(messages)
        if said and self.primary:
            with self._writing("the conversation before compaction"):
                self.service.checkpoint(self.scope, self.session_id, said, source=f"hermes:{self.platform}")
        elif said and require_checkpoint:
            raise StoreUnavailable("cmms did not store the conversation before compaction: memory is "
                                   "read-only in this agent; only the primary agent writes.")
        if not said or self.service is None:
            return ""
        return self._recall(said[-1][0], skip_injected=False, kind="summary")[0]  # the summary is written fresh

    # -- retain ---------------------------------------------------------------------------

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  messages: Optional[List[Dict[str, Any]]] = None, turn_author: Optional[Dict[str, Any]] = None,
                  **kwargs: Any) -> None:
        """Store the turn; `turn_author` ({"id", "name", "is_bot"}, Hermes 0.23's group chats)
        makes the user's message that speaker's, kept with the client that sent it."""
        with self._lock:  # the turn completed: its memory block is now in the history
            self._seen |= self._pending
            self._pending = set()
            told = self._author if self._author and self._author[0] == user_content else ("", None, "")
        if not self.primary:
            return
        with self._writing("this turn"):
            self.service.retain_turn(self.scope, session_id or self.session_id, user_content,
                                     assistant_content, source=f"hermes:{self.platform}",
                                     author=turns.author(turn_author) or told[1],
                                     client=turns.client(kwargs) or told[2])

    @contextmanager
    def _writing(self, what: str, service: Optional[engine.MemoryService] = None) -> Iterator[None]:
        """A write that cannot be stored fails loudly, in one sentence (Hermes logs a failed
        sync_turn as a WARNING): never "returned, stored nothing"."""
        if (service or self.service) is None:
            why = self._failure or "the provider is not initialised or already shut down"
            raise StoreUnavailable(f"cmms did not store {what}: the memory store is not open ({why}).")
        try:
            yield
        except CmmsError as exc:
            self._refused = True
            if not isinstance(exc, StoreUnavailable):
                raise
            raise self._not_stored(what, str(exc)) from exc
        except Exception as exc:
            self._refused = True
            log.debug("cmms: write failed", exc_info=True)
            cause = getattr(exc, "orig", None) or exc
            first = (str(cause).splitlines() or [type(cause).__name__])[0]
            raise self._not_stored(what, f"{brief(first, 300)}.") from exc

    def _not_stored(self, what: str, why: str) -> StoreUnavailable:
        """The one sentence a write that the store refused raises, said to the person too."""
        failure = StoreUnavailable(f"cmms did not store {what}: {why}")
        self._tell(str(failure))
        return failure

    def on_turn_start(self, turn_number: int = 0, message: str = "", *, author_id: Any = None,
                      author_name: Any = None, author_is_bot: Any = None, **kwargs: Any) -> None:
        """A new turn: its recall begins now (prefetch collects it), and who wrote it (0.23's
        author_*, and the gateway client if announced) is kept for its sync_turn. Turn numbers
        are assigned by the store, atomically with the write. A new turn has recalled nothing
        yet (0.20+ skips prefetch on trivial prompts: no stale recall_status)."""
        self._recalled = None
        who = turns.author(author_id=author_id, author_name=author_name, author_is_bot=author_is_bot)
        with self._lock:
            self._author = (message, who, turns.client(kwargs)) if isinstance(message, str) else None
        self._begin(message)

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: Optional[Dict[str, Any]] = None, **kwargs: Any) -> None:
        if not self.primary or action not in ("add", "replace"):
            return
        old_text = (metadata or {}).get("old_text") if action == "replace" else None
        from . import mirror
        try:
            with self._writing("this memory entry"):
                replaced = mirror.hermes_entries(self.service, self.scope, old_text, content) if old_text else []
                self.service.remember(self.scope, content, tags=[f"hermes-{target}"], supersedes=replaced,
                                      source="hermes:memory-tool", session_id=self.session_id or None)
        except StoreUnavailable as exc:  # Hermes logs what this hook raises at DEBUG only
            log.warning("%s", exc)
            raise
        except CmmsError as exc:  # e.g. nothing but a secret: not stored, and the turn goes on
            log.info("cmms: memory write not mirrored: %s", exc)

    def on_delegation(self, task: str, result: str, *, child_session_id: str = "", **kwargs: Any) -> None:
        if not self.primary or not (result or "").strip():
            return
        text = f"Delegated task: {task}\nResult: {result}"
        borrow = self.service is None and self.settings is not None and not self._failure
        service = engine.acquire(self.settings) if borrow else self.service  # after shutdown: borrow
        try:
            with self._writing("this delegation result", service):
                service.remember(self.scope, text, kind="observation", tier="episodic",
                                 source="hermes:delegation", session_id=self.session_id or None)
        except StoreUnavailable as exc:
            log.warning("%s", exc)
            raise
        except CmmsError as exc:
            log.info("cmms: delegation result not stored: %s", exc)
        finally:
            if service is not self.service:  # arrived after shutdown: borrow and give back
                engine.release(service, drain_timeout=0.0)

    # -- session boundaries ---------------------------------------------------------------

    def on_session_end(self, messages: List[Dict[str, Any]]) -> None:
        if self.service is not None and self.session_id:
            with self._writing("the end of this session"):
                self.service.flush_session(self.scope, self.session_id)

    def on_session_switch(self, new_session_id: str, *, parent_session_id: str = "",
                          reset: bool = False, **kwargs: Any) -> None:
        old = self.session_id
        self.session_id = new_session_id or old
        with self._lock:  # a new or compacted conversation no longer carries earlier blocks
            self._seen, self._pending, self._early, self._author = set(), set(), None, None
        if self.service is not None and old and (reset or old != self.session_id):
            with self._writing("the end of the previous session"):
                self.service.flush_session(self.scope, old)

    def shutdown(self) -> None:
        # Hermes drains its sync queue before calling this, so the last turn is stored by now
        # (on_session_end can race it, e.g. under `hermes -z`): flush once more, then let go.
        service, self.service = self.service, None
        if service is None:
            return
        if self._mirror is not None:
            from . import mirror

            mirror.release(self._mirror)
            self._mirror = None
        try:
            if self.session_id:  # unless on_session_end flushed it and no turn came since
                with self._writing("the end of this session", service):
                    if self._refused:  # a store that refused writes: the flush says so too
                        service.flush_session(self.scope, self.session_id)
                    else:
                        service.upkeep.flush_open_sessions(self.scope, self.session_id)
        finally:  # no wait for vectors: what is not indexed yet stays in the outbox for the next process
            engine.release(service, drain_timeout=0.0)

    # -- tools ----------------------------------------------------------------------------

    def handle_tool_call(self, tool_name: str, args: Dict[str, Any], **kwargs: Any) -> str:
        if self.service is None:
            why = f" ({self._failure})" if self._failure else ""
            return json.dumps({"error": f"cmms memory is not open{why}."})
        if not self.primary and tool_name != "cmms_recall":
            return json.dumps({"error": "Memory is read-only in this agent; only the primary agent writes."})
        with self.service.upkeep.tool_call("hermes", tool_name, self.scope) as call:
            try:
                result = call_tool(self.service, self.scope, tool_name, args, self.session_id)
            except CmmsError as exc:
                call.fail(str(exc))
                self.service.upkeep.record_call(f"hermes:{self.platform}", tool_name, self.scope, False, str(exc))
                return json.dumps({"error": str(exc)})
            self.service.upkeep.record_call(f"hermes:{self.platform}", tool_name, self.scope, True)
        return json.dumps(result, ensure_ascii=False)

    # -- configuration --------------------------------------------------------------------

    def get_config_schema(self) -> List[Dict[str, Any]]:
        """Every setting, typed (text | integer | number | boolean, with bounds)."""
        return cmms_setup.config_schema()

    def save_config(self, values: Dict[str, Any], hermes_home: str) -> None:
        """Write the settings typed and checked to memory.cmms (InvalidInput for a bad one)."""
        cmms_setup.save(Path(hermes_home), values)

    def post_setup(self, hermes_home: str, config: Dict[str, Any]) -> None:
        """`hermes memory setup [cmms]`: ask every setting with its type, then activate cmms."""
        cmms_setup.run_wizard(hermes_home, config)

    def get_status_config(self, provider_config: Dict[str, Any]) -> Dict[str, Any]:
        """The effective settings and where each comes from, for `hermes memory status`."""
        try:
            settings = Settings.load()
        except CmmsError as exc:
            return {"settings error": str(exc)}
        from ..service import store_problem

        status = cmms_setup.status_lines(settings)
        problem = store_problem(settings)
        local = settings.database_url.startswith("sqlite")
        fine = "writable" if local else "not checked here (a database server: checked when Hermes starts)"
        off = " Memory is off until this is fixed; each chat says so." if problem and not HOST_SAYS_UNAVAILABLE else ""
        return {**status, "store": f"NOT WRITABLE: {problem}{off}" if problem else fine}

    def backup_paths(self) -> List[str]:
        """What hermes-cmms keeps outside $HERMES_HOME, for `hermes backup` (see
        transfer.external_paths); a PostgreSQL database or a Chroma server adds nothing."""
        from ..service import external_paths

        try:
            return [str(path) for path in external_paths(Settings.load())]
        except CmmsError:
            return []


def _writable(settings: Settings) -> Settings:
    """`settings`, once nothing local stands in the way of writing the store (Hermes 0.19 loads
    cmms even then: see is_available)."""
    from ..service import store_problem

    problem = store_problem(settings)
    if problem:
        raise StoreUnavailable(problem)
    return settings


def on_session_finalize(session_id: str = "", **kwargs: Any) -> None:
    """General Hermes plugin hook (dual-mode plugin): flush the session that just ended."""
    _flush(session_id=session_id or None) if session_id else None


def on_gateway_event(event_type: str, context: Dict[str, Any]) -> None:
    """Gateway hook for session:end / session:reset: flush that user's open sessions (or, on a
    platform without user ids, that conversation's: its scope is named by the session key)."""
    context = context or {}
    platform, user_id, key = context.get("platform"), context.get("user_id"), context.get("session_key")
    if user_id:
        _flush(scope=scope_for(platform, str(user_id), None))
    elif key and (platform or "cli") not in LOCAL_PLATFORMS:
        _flush(scope=scope_for(platform, None, None, str(key)))


def _flush(**filters: Any) -> None:
    filters = {name: clean_key(value) for name, value in filters.items()}  # as the store keeps them
    service = engine.acquire(Settings.load())
    try:
        service.upkeep.flush_open_sessions(**filters)
    finally:
        engine.release(service, drain_timeout=0.0)
