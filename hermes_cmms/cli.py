"""The `hermes-cmms` command: a thin skin over the engine and the installer."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, Optional, Sequence

from .errors import CmmsError, InvalidInput


def _service(args):
    from .config import Settings
    from .service import MemoryService

    return MemoryService(Settings.load(args.hermes_home))


def cmd_install(args) -> int:
    from .config import hermes_home
    from .install import install, uninstall

    if args.purge and not args.uninstall:
        raise InvalidInput("--purge only makes sense with --uninstall.")
    home = hermes_home(args.hermes_home)
    lines = (uninstall(home, purge=args.purge, dry_run=args.dry_run) if args.uninstall
             else install(home, dry_run=args.dry_run))
    print("\n".join(lines))
    return 0


def cmd_status(args) -> int:
    service = _service(args)
    try:
        service.indexer.ready.wait(30)
        status = service.status()
    finally:
        service.close(drain_timeout=0)
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        for key, value in status.items():
            print(f"{key:>12}: {value}")
    return 0


def cmd_search(args) -> int:
    from .tools import call_tool

    service = _service(args)
    try:
        result = call_tool(service, args.scope, "cmms_recall", {"query": args.query, "limit": args.limit})
    finally:
        service.close(drain_timeout=0)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    for hit in result["results"]:
        print(f"{hit['id']}  {hit['date'][:10]}  {hit['role'] or hit['kind']:<9} {hit['content'][:200]}")
    if not result["results"]:
        print(f"No memories match {args.query!r} in scope {args.scope!r}.")
    return 0


def cmd_doctor(args) -> int:
    from .doctor import run_checks

    failed = False
    for level, name, detail in run_checks(args.hermes_home):
        print(f"{level:<4} {name}: {detail}")
        failed = failed or level == "FAIL"
    return 1 if failed else 0


def cmd_mcp(args) -> int:
    from .mcp_bridge import serve

    serve(args.hermes_home, transport=args.transport, host=args.host, port=args.port, scope=args.scope)
    return 0


def cmd_plugins(args) -> int:
    from .plugins import describe, make_plugin_manager

    for plugin in describe(make_plugin_manager()):
        print(f"{plugin['name']}: {', '.join(plugin['hooks'])}")
    return 0


def cmd_bench(args) -> int:
    from . import bench

    result = bench.run(args.suite, args.file, budget=args.budget, json_out=args.json,
                       convs=getattr(args, "convs", ""), ks=getattr(args, "k", ""),
                       limit=getattr(args, "limit", None))
    bench.report(result)
    return 0


def _add_bench(sub) -> None:
    bench = sub.add_parser("bench", help="Measure recall on LoCoMo or LongMemEval data.",
                           description="Measure recall by driving the cmms provider as Hermes does, "
                                       "one fresh temporary Hermes home per conversation.")
    suites = bench.add_subparsers(dest="suite", required=True)
    for name, help_text in (("locomo", "LoCoMo evidence recall (categories 1-4)."),
                            ("longmemeval", "LongMemEval_S recall_any@k / recall_all@k.")):
        p = suites.add_parser(name, help=help_text, description=help_text)
        p.add_argument("file", help="The benchmark data (JSON).")
        p.add_argument("--budget", type=int, help="Recall token budget (default: the cmms setting, 600).")
        p.add_argument("--json", metavar="OUT", help="Also write every figure to this JSON file.")
        p.set_defaults(func=cmd_bench)
    suites.choices["locomo"].add_argument("--convs", default="", help="Only these sample ids, comma-separated.")
    lme = suites.choices["longmemeval"]
    lme.add_argument("--k", default="1,3,5,10", help="Cut-offs for recall@k (default: 1,3,5,10).")
    lme.add_argument("--limit", type=int, help="Only the first N answerable questions.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hermes-cmms", description="Composite Memory for Hermes Agent.")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func: Callable, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--hermes-home", help="Hermes home directory (default: $HERMES_HOME or ~/.hermes)")
        p.set_defaults(func=func)
        return p

    p = add("install-hermes-plugin", cmd_install, "Install (or remove) the cmms provider in a Hermes home.")
    p.add_argument("--dry-run", action="store_true", help="Show what would change, change nothing.")
    p.add_argument("--uninstall", action="store_true", help="Remove the plugin and restore the previous provider.")
    p.add_argument("--purge", action="store_true", help="With --uninstall: also delete the stored memories.")
    p = add("status", cmd_status, "Show the store, its counts, the embedder in use and the index lag.")
    p.add_argument("--json", action="store_true")
    p = add("search", cmd_search, "Search memories of one scope.")
    p.add_argument("query")
    p.add_argument("--scope", default="local:default", help="Scope to search (default: local:default).")
    p.add_argument("--limit", type=int, default=8)
    p.add_argument("--json", action="store_true")
    p = add("mcp", cmd_mcp, "Serve this memory to MCP clients (stdio by default, or streamable HTTP).")
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1",
                   help="HTTP address (default 127.0.0.1; any other needs CMMS_MCP_TOKEN)")
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    p.add_argument("--scope", help="Scope of the CMMS-style tools (default: the Hermes CLI user's, "
                                   "local:<profile>)")
    add("doctor", cmd_doctor, "Check the Hermes install, plugin files, config, embedder and database.")
    add("plugins", cmd_plugins, "List loaded hermes-cmms plugins and the hooks each implements.")
    _add_bench(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CmmsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
