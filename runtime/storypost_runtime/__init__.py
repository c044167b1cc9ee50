"""storypost_runtime."""
