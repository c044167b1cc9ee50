"""The exit codes of `storypost` (its server commands use the same: storypost_cli.output)."""

EXIT_BAD_INPUT = 3
EXIT_AUTH = 4
EXIT_RATE_LIMITED = 5
EXIT_UNAVAILABLE = 6
EXIT_SERVER = 7
# --wait: the post or draft ended failed, canceled or deleted.
EXIT_NOT_PUBLISHED = 8
# --wait: --wait-timeout passed before a final state.
EXIT_STILL_PENDING = 9
# story/draft bulk: some rows failed at the API (the others were sent).
EXIT_ROWS_FAILED = 10
EXIT_INTERRUPTED = 130
