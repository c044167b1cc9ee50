"""account_svc."""
