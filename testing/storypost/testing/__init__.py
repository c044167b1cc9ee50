"""storypost.testing: a running storypost stack for pytest suites (ours and our users')."""
