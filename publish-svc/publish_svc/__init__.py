"""publish_svc."""
