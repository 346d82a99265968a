"""hermes-cmms: Composite Memory for Hermes. The code lives in the pip package hermes_cmms; this shim hands Hermes a MemoryProvider."""


def register(ctx):
    if hasattr(ctx, "register_memory_provider"):  # Hermes' memory-provider loader
        from hermes_cmms.provider import CmmsMemoryProvider
        ctx.register_memory_provider(CmmsMemoryProvider())
        return
    from hermes_cmms.provider import on_session_finalize  # general plugin manager (dual mode)
    ctx.register_hook("on_session_finalize", on_session_finalize)
