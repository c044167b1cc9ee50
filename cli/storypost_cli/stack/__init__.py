"""The embedded stack: every storypost process and its dependencies on loopback."""

from storypost_cli.stack.components import COMPONENTS
from storypost_cli.stack.errors import StackError
from storypost_cli.stack.ports import StackPorts
from storypost_cli.stack.stack import EmbeddedStack

__all__ = ["COMPONENTS", "EmbeddedStack", "StackError", "StackPorts"]
