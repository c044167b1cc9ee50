"""The `storypost` caller CLI (`pip install storypost-client[cli]`), built on the SDK.

Its modules import only the standard library at the top: the SDK's clients, httpx and rich
are imported when a command runs, so `storypost --help` starts fast
(tests/unit/client/test_cli_help.py, bench/cli_startup.py).
"""
