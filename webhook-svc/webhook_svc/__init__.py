"""webhook_svc."""
