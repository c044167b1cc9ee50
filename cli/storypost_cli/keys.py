"""`storypost keys service`: new caller credentials for a deployment (docs/service-auth.md).

Prints one `<name>-service-key=<name>:<key>` line per caller (each component's
STORYPOST_SERVICE_KEY, secret) and one `service-public-keys=...` line (every server's
STORYPOST_SERVICE_PUBLIC_KEYS, not secret), the form `kubectl create secret generic
--from-env-file` reads.
"""

from __future__ import annotations

import argparse
import sys

from storypost_cli.parsers import command_group
from storypost_client.cli.parsing import Subparsers, example
from storypost_runtime.service_auth import CALLERS, ServiceCredential, public_keys_setting


def register(commands: Subparsers) -> None:
    sub = command_group(
        commands, "keys", "make keys for a deployment", "storypost keys service > service-keys.env"
    )
    p = sub.add_parser(
        "service",
        help="a signing credential per caller and the servers' public key list",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=example(
            "storypost keys service > service-keys.env",
            "storypost keys service edge publish-svc render-svc admin my-batch-job",
        ),
    )
    p.add_argument(
        "names",
        nargs="*",
        default=list(CALLERS),
        help=f"callers (default: {' '.join(CALLERS)}); add your own clients' names",
    )
    p.set_defaults(handler=run_service_keys)


def run_service_keys(args: argparse.Namespace) -> None:
    names: list[str] = list(dict.fromkeys(args.names))
    bad = [name for name in names if not name or ":" in name or "," in name or "=" in name]
    if bad:
        raise SystemExit(f"storypost keys service: names may not hold ':', ',' or '=': {bad}")
    credentials = {name: ServiceCredential.generate(name) for name in names}
    for name, credential in credentials.items():
        print(f"{name}-service-key={credential.secret()}")
    print(f"service-public-keys={public_keys_setting(credentials)}")
    sys.stdout.flush()
