"""hermes-cmms gateway hook: on /new and /reset, flush that user's open memory sessions."""
import asyncio
import logging


async def handle(event_type, context):
    """Flush in a worker thread so the gateway's event loop keeps serving other chats."""
    try:
        from hermes_cmms.provider import on_gateway_event
        await asyncio.to_thread(on_gateway_event, event_type, dict(context or {}))
    except Exception as exc:  # noqa: BLE001 - a memory flush never breaks the gateway
        logging.getLogger("hermes_cmms.gateway_hook").warning("cmms session flush failed: %s", exc)
