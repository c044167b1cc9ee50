"""The Chromium side of rendering: the pool, page network routing, page steps."""
