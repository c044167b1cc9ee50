"""storypost_cli."""
