"""The arguments every door offers, in one place: the choices each verb takes and the limits it
holds them to. A feature checks against these names and a door offers them (argparse choices, a
JSON Schema enum, a form's options), so the CLI, the MCP tools, the Hermes tools and the
dashboard never drift apart."""
from __future__ import annotations

from .lifecycle_rules import LIVE_STATES

# -- memories -------------------------------------------------------------------------------
TIERS = ("working", "episodic", "semantic")
# A page's state filter: current (neither superseded nor expired), superseded, expired, all, or a
# lifecycle state (current memories in it).
STATES = ("active", "superseded", "expired", "all", *(s for s in LIVE_STATES if s != "active"))
MODES = ("keyword", "meaning")  # how a page's query matches
SORTS = ("newest", "oldest", "confidence", "relevance")
MAX_QUERY_CHARS = 10_000  # a query, at any door
MAX_PAGE, MAX_OFFSET = 200, 10**9  # one page of memories
MAX_AUDIT_PAGE, MAX_AUDIT_OFFSET = 500, 10**9  # one audit_log call
MAX_HISTORY_PAGE = 500  # sessions on one page
# A recall's kind: "turn", a block put in front of the model for a turn (Hermes' prefetch, a
# recall verb); "summary", one given to the summary of a conversation Hermes compacts (never a turn).
RECALL_KINDS = ("turn", "summary")

# -- beliefs (the CMMS 0.11 contracts' vocabularies and ours) ----------------------------------
MAX_BELIEF_CHARS = 2_048  # the contracts' maxLength of a proposition
STRATEGIES = ("keep_a", "keep_b", "merge", "discard_both", "auto")  # "auto" is ours
BELIEF_STATES = ("candidate", "validated", "active", "stale", "archived", "superseded", "contested")
REFLECT_MODES = ("overview", "contradictions", "relations", "decay", "topics", "evidence_audit", "confidence")
LIFECYCLE_STATES = ("active", "superseded", "discarded", "contradicted")  # the contract's coarse states
SOURCE_TYPES = ("fact", "decision", "observation", "user_statement")  # the contract's, for sources

# -- health and transfer --------------------------------------------------------------------
AUDIT_TYPES = ("orphans", "receipts", "lifecycle", "confidence", "vector_drift", "graph_drift")
AUDIT_CHOICES = ("full", "consistency", *AUDIT_TYPES, "all")  # "all": our earlier name of "full"
AUDIT_CONTRACT_TYPES = ("full", "consistency", "orphans", "confidence")  # the CMMS contract's enum
EXPORT_FORMATS = ("jsonl", "memory-json", "markdown")
JOBS = ("sweep", "decay", "consolidate", "learn", "all")  # what `maintain` runs
