"""storypost_cli."""

# Before anything imports gRPC: the supervisor forks its components (see storypost_runtime).
import storypost_runtime  # noqa: F401
