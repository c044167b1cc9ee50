"""Every patch of mongoeco the embedded server applies, in order, each with what it fixes and
the tests that fail without it (tests/unit/cli/test_embedded_mongo*.py; tests/unit/cli/
test_mongoeco_patches.py checks that the table and the tests agree)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from storypost_cli.embedded_mongo.changes import (
    coalesce_change_dispatch,
    record_no_changes_while_nobody_watches,
)
from storypost_cli.embedded_mongo.indexes import (
    add_sqlite_indexes_for_mongo_indexes,
    answer_field_probes_from_indexes,
    index_ids_of_every_collection,
    index_ttl_entries_by_document,
)
from storypost_cli.embedded_mongo.reads import (
    finish_one_document_reads_under_the_lock,
    look_up_sets_of_strings_by_index,
    match_scalars_without_array_branches,
    read_on_the_engine_connection,
    read_one_document_when_an_id_is_required,
    skip_decimal_scans_without_decimals,
)
from storypost_cli.embedded_mongo.writes import (
    commit_insert_commands_in_one_transaction,
    skip_full_scan_for_plain_ids,
    use_id_lookup_for_guarded_writes,
    use_sql_prefilter_for_compound_unique_indexes,
)

# What a patch fixes: a wrong result (an error or a wrong answer where MongoDB gives the right
# one), a missing feature, or a cost (the same answer, without reading every document).
Fixes = Literal["wrong result", "missing feature", "cost"]


@dataclass(frozen=True)
class Patch:
    apply: Callable[[], None] | Callable[[Path], None]
    fixes: Fixes
    # Tests in tests/unit/cli/test_embedded_mongo*.py that fail without the patch.
    tests: tuple[str, ...]
    # Whether `apply` takes the SQLite file's path.
    takes_path: bool = False

    @property
    def name(self) -> str:
        return self.apply.__name__

    def apply_to(self, path: Path) -> None:
        if self.takes_path:
            self.apply(path)  # type: ignore[call-arg]
        else:
            self.apply()  # type: ignore[call-arg]


PATCHES: tuple[Patch, ...] = (
    Patch(
        skip_full_scan_for_plain_ids,
        "cost",
        (
            "test_duplicates_are_refused_for_every_kind_of_id",
            "test_plain_ids_skip_the_collection_scan_numeric_ids_keep_it",
        ),
    ),
    Patch(
        use_id_lookup_for_guarded_writes,
        "cost",
        ("test_guarded_writes_by_id_match_exactly_as_before",),
    ),
    Patch(
        read_one_document_when_an_id_is_required,
        "cost",
        ("test_reads_by_id_that_mongoeco_filters_in_python_read_one_document",),
    ),
    Patch(
        use_sql_prefilter_for_compound_unique_indexes,
        "cost",
        (
            "test_compound_unique_keys_are_checked_in_sql_and_still_refuse_every_duplicate",
            "test_a_compound_unique_key_is_checked_through_its_index",
        ),
    ),
    Patch(
        coalesce_change_dispatch,
        "cost",
        (
            "test_committed_changes_reach_the_hub_in_batches_off_the_event_loop",
            "test_the_engine_closes_only_after_a_running_change_dispatch_and_drops_later_ones",
        ),
    ),
    Patch(
        record_no_changes_while_nobody_watches,
        "cost",
        (
            "test_writes_record_no_changes_while_nobody_watches",
            "test_a_stream_sees_what_is_written_while_it_watches_and_refuses_older_tokens",
        ),
    ),
    Patch(
        read_on_the_engine_connection,
        "cost",
        ("test_reads_of_many_documents_open_no_connection_and_keep_their_snapshot",),
    ),
    Patch(
        finish_one_document_reads_under_the_lock,
        "wrong result",  # "database is locked" 500s of racing identical schedule calls
        ("test_a_one_document_read_holds_no_snapshot_once_the_engine_lock_is_let_go",),
    ),
    Patch(
        match_scalars_without_array_branches,
        "cost",
        ("test_the_pollers_queries_read_only_the_rows_they_match_and_find_the_same",),
    ),
    Patch(
        look_up_sets_of_strings_by_index,
        "cost",
        ("test_a_set_of_string_ids_is_looked_up_by_index_and_finds_the_same",),
    ),
    Patch(
        answer_field_probes_from_indexes,
        "cost",
        ("test_a_probe_index_is_committed_between_engine_operations_never_inside_one",),
    ),
    Patch(
        skip_decimal_scans_without_decimals,
        "cost",
        ("test_decimal_scans_are_skipped_until_a_decimal_is_stored",),
        takes_path=True,
    ),
    Patch(
        add_sqlite_indexes_for_mongo_indexes,
        "cost",
        (
            "test_lookups_by_indexed_fields_use_sqlite_indexes_and_find_the_same",
            "test_writes_to_one_collection_leave_the_indexes_of_others_alone",
            "test_indexes_of_earlier_versions_over_every_collection_are_replaced",
        ),
    ),
    Patch(
        index_ids_of_every_collection,
        "cost",
        ("test_reads_by_id_with_more_conditions_use_the_id_index_and_find_the_same",),
    ),
    Patch(
        index_ttl_entries_by_document,
        "cost",
        ("test_a_document_s_ttl_entries_are_replaced_through_an_index",),
    ),
    Patch(
        commit_insert_commands_in_one_transaction,
        "cost",
        (
            "test_an_insert_command_commits_once_and_reports_each_refused_document",
            "test_an_ordered_insert_command_stops_at_its_first_refused_document",
            "test_documents_left_unstored_by_a_failed_batch_are_reported_one_by_one",
        ),
    ),
)


def apply_patches(path: Path, patches: tuple[Patch, ...] = PATCHES) -> None:
    """Applies every patch, in the table's order (each wraps mongoeco's function once)."""
    for patch in patches:
        patch.apply_to(path)
