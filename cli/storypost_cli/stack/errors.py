"""The one error the embedded stack raises: it names the component and shows its log."""

from __future__ import annotations


class StackError(RuntimeError):
    """A component did not start, did not become healthy in time, or exited unexpectedly."""

    def __init__(self, component: str, message: str, log_tail: str = "") -> None:
        self.component = component
        self.log_tail = log_tail
        text = f"{component}: {message}"
        if log_tail:
            text += f"\n--- last lines of the {component} log ---\n{log_tail}"
        super().__init__(text)
