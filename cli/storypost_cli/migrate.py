"""`storypost migrate`: applies every service's schema before its new release starts
(docs/migrations.md): steps not done yet (backfills in batches, resumable), then indexes.

In the images, where there is no `storypost` script, the same command is
`python -m storypost_cli.migrate` (the Kubernetes Job, the compose service): this module imports
neither the caller CLI nor gRPC, only the services' schema plans.

Exit codes: 0 done (or, with --status, ready); 3 stopped by --timeout or SIGTERM (run it again:
it resumes), or, with --status, not ready.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import structlog
from pydantic_settings import SettingsConfigDict
from pymongo.asynchronous.database import AsyncDatabase

from account_svc import migrations as account_migrations
from publish_svc import migrations as publish_migrations
from publish_svc.insights.config import InsightsSettings
from render_svc import migrations as render_migrations
from storypost_runtime.logs import configure_logging
from storypost_runtime.migrations import (
    MIGRATE_COMMAND,
    MigrationTimedOut,
    Plan,
    Report,
    index_digest,
    migrate,
    missing,
    schema_state,
)
from storypost_runtime.mongo import Document, mongo_client
from storypost_runtime.settings import BaseServiceSettings, MongoSettings, load_settings
from webhook_svc import migrations as webhook_migrations

if TYPE_CHECKING:
    from storypost_client.cli.parsing import Subparsers

EXIT_NOT_DONE = 3
DEFAULT_TIMEOUT_SECONDS = 3600.0


class MigrateSettings(BaseServiceSettings, MongoSettings, InsightsSettings):
    """The database, and the settings an index is made from (the insights' retention): the
    Job reads the services' own ConfigMap, so it builds what they check."""

    model_config = SettingsConfigDict(env_prefix="STORYPOST_", frozen=True, extra="ignore")


PlanOf = Callable[[AsyncDatabase[Document], MigrateSettings], Plan]
PLANS: dict[str, PlanOf] = {
    account_migrations.SERVICE: lambda db, _s: account_migrations.plan(db),
    render_migrations.SERVICE: lambda db, _s: render_migrations.plan(db),
    publish_migrations.SERVICE: lambda db, s: publish_migrations.plan(db, s.insights_retention),
    webhook_migrations.SERVICE: lambda db, _s: webhook_migrations.plan(db),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--service",
        action="append",
        choices=sorted(PLANS),
        help="only this service's schema (repeatable; default: every service)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help="stop after this long, keeping what was done (run again to resume; default 3600)",
    )
    parser.add_argument(
        "--status",
        action="store_true",
        help="print each service's schema version and what is still to run; change nothing",
    )


def register(subparsers: Subparsers) -> None:
    # Only the `storypost` CLI registers the command; the images' `python -m` needs no SDK.
    from storypost_client.cli.parsing import example

    parser = subparsers.add_parser(
        "migrate",
        help="apply the services' schema (indexes, backfills): the first step of every upgrade",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=example("storypost migrate --status", "storypost migrate --timeout 3600"),
    )
    add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> None:
    settings = load_settings(MigrateSettings)
    configure_logging("storypost-migrate", settings.log_level)
    # Progress on stderr (JSON lines, as every component logs); stdout keeps the result.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    services: Sequence[str] = args.service or list(PLANS)
    raise SystemExit(asyncio.run(main(settings, services, args.timeout, status=args.status)))


async def main(
    settings: MigrateSettings, services: Sequence[str], limit_seconds: float, *, status: bool
) -> int:
    """Migrates (or reports on) `services`, each under its own lock, all within `limit_seconds`."""
    # Index builds on a large collection take longer than a request: each operation may take
    # the whole time given.
    client = mongo_client(
        settings.model_copy(update={"mongo_timeout_seconds": limit_seconds}), "storypost-migrate"
    )
    try:
        db = client[settings.mongo_database]
        plans = [PLANS[name](db, settings) for name in services]
        if status:
            states = [await _status(plan) for plan in plans]
            print(json.dumps(states, indent=2, default=str))
            return 0 if all(s["ready"] for s in states) else EXIT_NOT_DONE
        work = asyncio.gather(
            *(migrate(plan, limit_seconds=limit_seconds) for plan in plans),
            return_exceptions=True,
        )
        # SIGTERM (the Job deleted, its deadline): each backfill keeps the place it reached and
        # gives its lock back, so the next run resumes at once.
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, work.cancel)
        try:
            results = await work
        except asyncio.CancelledError:
            print(
                f"storypost migrate: stopped by SIGTERM; what was done is kept: run "
                f"`{MIGRATE_COMMAND}` again to resume",
                file=sys.stderr,
            )
            return EXIT_NOT_DONE
        reports = [r for r in results if isinstance(r, Report)]
        errors = [r for r in results if isinstance(r, BaseException)]
        if any(not isinstance(e, MigrationTimedOut) for e in errors):
            raise next(e for e in errors if not isinstance(e, MigrationTimedOut))
        print(json.dumps([vars(r) for r in reports], indent=2, default=str))
        for error in errors:
            print(f"storypost migrate: {error}", file=sys.stderr)
        return EXIT_NOT_DONE if errors else 0
    finally:
        await client.close()


async def _status(plan: Plan) -> dict[str, Any]:
    state = await schema_state(plan)
    reason = await missing(plan)
    return {
        "service": plan.service,
        "ready": reason is None,
        "version": int(state.get("version", 0)),
        "required": plan.version,
        "indexes": await index_digest(plan),
        "indexesApplied": state.get("indexDigests", []),
        "backfills": state.get("cursors", {}),
        **({"missing": reason} if reason else {}),
    }


def cli_main(argv: Sequence[str] | None = None) -> None:
    """`python -m storypost_cli.migrate [--service …] [--timeout …] [--status]`."""
    parser = argparse.ArgumentParser(prog="storypost migrate", description=__doc__)
    add_arguments(parser)
    run(parser.parse_args(argv))


if __name__ == "__main__":
    cli_main()
