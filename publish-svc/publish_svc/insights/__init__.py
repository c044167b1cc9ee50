"""Insights of published posts and their accounts, collected from the platforms
(docs/insights.md): `wiring.build_insights` makes the collector and InsightsService."""
