"""What an organization posts to: connected platform accounts, connect links and the connect
flow, platform tokens (encrypted at rest), mentions, daily post limits and credits
(docs/accounts.md)."""
