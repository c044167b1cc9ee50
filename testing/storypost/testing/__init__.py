"""storypost.testing: a running storypost stack for pytest suites (ours and our users')."""

# Before anything imports gRPC: the stack's components are forked from the test process
# (see storypost_runtime).
import storypost_runtime  # noqa: F401
