"""The embedded MongoDB of development and tests: mongoeco's wire server over a SQLite file,
with the patches that make it answer as MongoDB does at the cost the stack needs.

Rooms: `version` (the one mongoeco release the patches are for), `patching` (how a patch
replaces a function once), `writes`, `reads`, `indexes`, `changes` (the patches, by what they
touch), `patches` (the table of every patch, what it fixes and its tests), `server` (the
launcher, `python -m storypost_cli.embedded_mongo`). Production runs on MongoDB: nothing here
reaches a service's data model."""

from storypost_cli.embedded_mongo.changes import (
    coalesce_change_dispatch,
    record_no_changes_while_nobody_watches,
)
from storypost_cli.embedded_mongo.indexes import (
    ProbeIndexes,
    add_sqlite_indexes_for_mongo_indexes,
    answer_field_probes_from_indexes,
    index_ids_of_every_collection,
    index_name,
    index_ttl_entries_by_document,
)
from storypost_cli.embedded_mongo.patches import PATCHES, Patch, apply_patches
from storypost_cli.embedded_mongo.reads import (
    finish_one_document_reads_under_the_lock,
    look_up_sets_of_strings_by_index,
    match_scalars_without_array_branches,
    read_on_the_engine_connection,
    read_one_document_when_an_id_is_required,
    skip_decimal_scans_without_decimals,
)
from storypost_cli.embedded_mongo.server import main, serve
from storypost_cli.embedded_mongo.version import (
    MONGOECO_VERSION,
    MongoecoVersionError,
    check_mongoeco_version,
)
from storypost_cli.embedded_mongo.writes import (
    commit_insert_commands_in_one_transaction,
    skip_full_scan_for_plain_ids,
    use_id_lookup_for_guarded_writes,
    use_sql_prefilter_for_compound_unique_indexes,
)

__all__ = [
    "MONGOECO_VERSION",
    "PATCHES",
    "MongoecoVersionError",
    "Patch",
    "ProbeIndexes",
    "add_sqlite_indexes_for_mongo_indexes",
    "answer_field_probes_from_indexes",
    "apply_patches",
    "check_mongoeco_version",
    "coalesce_change_dispatch",
    "commit_insert_commands_in_one_transaction",
    "finish_one_document_reads_under_the_lock",
    "index_ids_of_every_collection",
    "index_name",
    "index_ttl_entries_by_document",
    "look_up_sets_of_strings_by_index",
    "main",
    "match_scalars_without_array_branches",
    "read_on_the_engine_connection",
    "read_one_document_when_an_id_is_required",
    "record_no_changes_while_nobody_watches",
    "serve",
    "skip_decimal_scans_without_decimals",
    "skip_full_scan_for_plain_ids",
    "use_id_lookup_for_guarded_writes",
    "use_sql_prefilter_for_compound_unique_indexes",
]
