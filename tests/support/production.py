"""Addresses a production process is given (never the development defaults, which production
refuses: storypost_runtime.settings.refuse_development_address). Settings classes ignore the
ones they do not read."""

from __future__ import annotations

ADDRESSES = {
    "mongo_url": "mongodb://mongo.storypost-deps:27017/?replicaSet=rs0",
    "nats_url": "nats://nats.storypost-deps:4222",
    "public_url": "https://api.storypost.example.com",
    "sandbox_url": "https://platforms.storypost.example.com",
}
# The same, as the STORYPOST_* variables a process reads.
ADDRESS_ENV = {f"STORYPOST_{field.upper()}": value for field, value in ADDRESSES.items()}
