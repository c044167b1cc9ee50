"""render_svc."""
