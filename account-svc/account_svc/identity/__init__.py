"""Who calls: organizations and their API keys, app users, sessions, sign-in limits and the
API rate buckets (docs/accounts.md)."""
