"""hermes-cmms: Composite Memory for Hermes, as the directory plugin `cmms` (register_memory_provider).

The code lives in the pip package hermes_cmms, which pyproject.toml beside this file declares:
Hermes 0.23's `hermes plugins install` resolves it into Hermes' venv; on 0.19-0.22
`hermes-cmms install-hermes-plugin` writes this same directory after a pip install. Importing
this file imports nothing (`hermes plugins validate` imports it bare); hermes_cmms is imported
when Hermes calls register().
"""


def register(ctx):
    if hasattr(ctx, "register_memory_provider"):  # Hermes' memory-provider loader
        from hermes_cmms.provider import CmmsMemoryProvider
        ctx.register_memory_provider(CmmsMemoryProvider())
        return
    from hermes_cmms.provider import on_session_finalize  # general plugin manager (dual mode)
    ctx.register_hook("on_session_finalize", on_session_finalize)
