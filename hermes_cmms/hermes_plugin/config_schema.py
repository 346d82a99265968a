"""cmms' settings for Hermes' provider config panel (`hermes plugins config`, the Dashboard).

Hermes loads this file by its path and lets it import only plugins.memory.config_schema
(HERMES-0.23 item 5). Hermes saves the panel to $HERMES_HOME/cmms/config.json, which cmms reads
under the environment and over memory.cmms in config.yaml (docs/settings.md).
"""
try:
    from plugins.memory.config_schema import ProviderConfigSchema, ProviderField, ProviderFieldOption
except ImportError:  # a Hermes without the declared panel: nothing to declare
    ProviderConfigSchema = None


def _fields():
    def pick(*values):
        return tuple(ProviderFieldOption(value=v, label=v) for v in values)

    def field(key, label, kind="text", default="", description="", **more):
        return ProviderField(key=key, label=label, kind=kind, default=default, description=description, **more)

    return (
        field("database_url", "SQL store URL", description="Empty: SQLite in $HERMES_HOME/cmms/cmms.db.",
              placeholder="postgresql+psycopg://user@host/db", group="Store"),
        field("chroma_url", "Chroma server URL", description="Empty: embedded Chroma in $HERMES_HOME/cmms/chroma.",
              placeholder="http://host:port", group="Store"),
        field("chroma_buckets", "Chroma server collections a view", "number", "100",
              "Scopes are hashed into this many collections a view (after a change: hermes-cmms reindex).",
              group="Store"),
        field("embedder", "Embedding model", "select", "auto", "Semantic recall; never downloads.", inline=True,
              options=pick("auto", "onnx", "chroma-default", "sentence-transformers", "none"), group="Recall"),
        field("embedder_dtype", "sentence-transformers precision", "select", "auto",
              options=pick("auto", "float32", "bfloat16"), group="Recall"),
        field("recall_tokens", "Recall budget (tokens)", "number", "600",
              "Token budget of the memory injected per turn (50-8000).", inline=True, group="Recall"),
        field("scheduler", "Background jobs", "bool", "true", "TTL sweep, decay, consolidation.", group="Lifecycle"),
        field("sweep_interval_s", "Sweep interval (s)", "number", "60",
              "Seconds between sweeps of expired working memory.", group="Lifecycle"),
        field("decay_interval_s", "Decay interval (s)", "number", "3600", "Seconds between decay runs.",
              group="Lifecycle"),
        field("consolidate_interval_s", "Consolidation interval (s)", "number", "21600",
              "Seconds between consolidation runs.", group="Lifecycle"),
        field("consolidation_llm", "Consolidation summaries by", "select", "off",
              "hermes: your model through Hermes.", options=pick("off", "hermes"), group="Lifecycle"),
        field("snapshot_days", "Snapshot days", "number", "30",
              "Days a forgotten memory's snapshot stays in the audit trail.", group="Lifecycle"),
        field("recall_events", "Recall events kept", "number", "1000",
              "Recall events (ids only) a scope keeps.", group="Lifecycle"),
        field("llm", "Extraction model", default="off",
              description="off, hermes, or an OpenAI-compatible http(s) URL.", group="Extraction"),
        field("llm_model", "Model name", description='Sent to that URL (empty: "default").', group="Extraction"),
        field("mirror", "Mirror MEMORY.md / USER.md", "bool", "true", inline=True, group="Files"),
        field("inbox", "Inbox folder", description="Dropped .md / .txt files are learned (empty: none).",
              group="Files"),
    )


CONFIG_SCHEMA = None if ProviderConfigSchema is None else ProviderConfigSchema(
    name="cmms", label="Composite Memory (cmms)", fields=_fields())
