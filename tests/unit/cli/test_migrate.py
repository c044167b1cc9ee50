"""The migrate Job's command (`python -m storypost_cli.migrate`, what the Job and the compose
service run; `storypost migrate` is the same) against the stand-in, and a production service
before and after it: refused with the message first, serving past the check afterwards."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator

import pytest
from pymongo import AsyncMongoClient

from publish_svc.config import PublishSettings
from storypost_cli.migrate import PLANS
from storypost_runtime.migrations import SCHEMA_COLLECTION
from storypost_runtime.mongo import Document
from storypost_runtime.settings import BaseServiceSettings
from tests.support.migrations import production_env, run, schema_checked
from tests.unit.runtime.test_production_keys import MODULES, own_secrets


@pytest.fixture
async def database(mongo_url: str) -> AsyncIterator[str]:
    name = f"t{uuid.uuid4().hex[:12]}"
    yield name
    client: AsyncMongoClient[Document] = AsyncMongoClient(mongo_url)
    await client.drop_database(name)
    await client.close()


async def test_a_production_service_refuses_until_the_migrate_command_ran(
    mongo_url: str, database: str
) -> None:
    env = production_env(mongo_url, database)
    code, _, err = await run(env, "-m", "publish_svc")
    assert code == 2, err
    assert (
        f"publish-svc cannot start: publish-svc: the database '{database}' is not ready for this "
        "release: schema version 0 of 2 (to run: 1 posts.listedAt, 2 queue_names); its indexes "
        "are not this release's. Run `storypost migrate` (the migrate Job) before starting it"
    ) in err
    # It changed nothing: no index, no schema record.
    client: AsyncMongoClient[Document] = AsyncMongoClient(mongo_url)
    try:
        db = client[database]
        assert await db[SCHEMA_COLLECTION].count_documents({}) == 0
        assert "posts" not in await db.list_collection_names()

        code, out, err = await run(env, "-m", "storypost_cli.migrate", "--status")
        assert code == 3, err
        status = {s["service"]: s for s in json.loads(out)}
        assert set(status) == set(PLANS) and not any(s["ready"] for s in status.values())

        code, out, err = await run(env, "-m", "storypost_cli.migrate", "--timeout", "60")
        assert code == 0, err
        reports = {r["service"]: r for r in json.loads(out)}
        assert reports["publish-svc"]["steps_run"] == ["1 posts.listedAt", "2 queue_names"]
        assert '"message": "migrated"' in err  # progress on stderr, the result on stdout

        code, out, err = await run(env, "-m", "storypost_cli.migrate", "--status")
        assert code == 0, err
        assert all(s["ready"] for s in json.loads(out))
        assert "status_due" in await db["posts"].index_information()
    finally:
        await client.close()
    log = await schema_checked(env)
    assert "cannot start" not in log


@pytest.mark.parametrize("cls", [c for c in MODULES if c is not PublishSettings])
async def test_every_service_refuses_a_database_without_its_schema_in_production(
    mongo_url: str, database: str, cls: type[BaseServiceSettings]
) -> None:
    module = MODULES[cls]
    service = module.replace("_", "-")
    env = {
        **production_env(mongo_url, database),
        **own_secrets(cls),
        "STORYPOST_MONGO_URL": mongo_url,
    }
    code, _, err = await run(env, "-m", module)
    assert code == 2, err
    assert f"{service} cannot start: {service}: the database '{database}' is not ready" in err
    assert "its indexes are not this release's. Run `storypost migrate`" in err
    # After the command for it alone, the same process gets past its check.
    code, _, err = await run(env, "-m", "storypost_cli.migrate", "--service", service)
    assert code == 0, err
    assert "cannot start" not in await schema_checked(env, module)


async def test_the_migrate_command_refuses_the_development_database_in_production() -> None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "STORYPOST_ENVIRONMENT": "production",
    }
    code, _, err = await run(env, "-m", "storypost_cli.migrate")
    assert code == 2
    assert "STORYPOST_MONGO_URL is not set, and STORYPOST_ENVIRONMENT=production refuses" in err
