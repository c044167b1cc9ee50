"""The app pages, one module per area."""
