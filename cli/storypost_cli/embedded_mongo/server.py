"""The launcher: checks mongoeco's version, applies every patch of `PATCHES`, then serves the
MongoDB wire protocol from a SQLite file until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from storypost_cli.embedded_mongo.patches import apply_patches
from storypost_cli.embedded_mongo.version import MongoecoVersionError, check_mongoeco_version


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m storypost_cli.embedded_mongo",
        description="Serve the MongoDB wire protocol from a SQLite file (development and tests).",
    )
    parser.add_argument("--path", type=Path, required=True, help="SQLite database file")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=27017, help="port to listen on (0: any)")
    return parser.parse_args(argv)


async def serve(path: Path, host: str, port: int) -> None:
    """Serves until SIGTERM or SIGINT, then closes the listener and the SQLite engine."""
    # Imported here: the launcher checks the version before anything of mongoeco loads.
    from mongoeco.engines.sqlite import SQLiteEngine
    from mongoeco.wire.proxy import AsyncMongoEcoProxyServer

    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    path.parent.mkdir(parents=True, exist_ok=True)
    server = AsyncMongoEcoProxyServer(engine=SQLiteEngine(str(path)), host=host, port=port)
    address = await server.start()
    try:
        # The supervisor reads this line; flush so it reaches the log file at once.
        print(f"embedded mongo listening on {address.host}:{address.port} ({path})", flush=True)
        await stopping.wait()
        print("embedded mongo stopping", flush=True)
    finally:
        await server.close()
    print("embedded mongo stopped", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        check_mongoeco_version()
    except MongoecoVersionError as error:
        print(error, file=sys.stderr)
        return 2
    apply_patches(args.path)
    try:
        asyncio.run(serve(args.path, args.host, args.port))
    except OSError as error:
        # A taken port is the usual cause: one clear line, no traceback.
        print(f"embedded mongo cannot start on {args.host}:{args.port}: {error}", file=sys.stderr)
        return 1
    return 0
