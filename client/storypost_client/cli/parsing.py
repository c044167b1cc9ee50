"""What every `storypost` parser shares: its class, how help is laid out, its example."""

from __future__ import annotations

import argparse
from typing import Any, TypeAlias

# argparse's subparsers are generic for type checkers only (typeshed): a string, so Python
# never subscripts the class.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

EXAMPLE_HEADING = "example:"
# The UUID the examples show.
SAMPLE_UUID = "903646e7-72a2-50bd-9154-1c7c83d8c0c0"


def example(*commands: str) -> str:
    """An epilog: `example:` and one command a line, printed as written (not wrapped), so
    it can be copied."""
    return "\n".join([EXAMPLE_HEADING, *(f"  {command}" for command in commands)])


class HelpFormatter(argparse.HelpFormatter):
    """Wraps descriptions to the terminal; keeps an example epilog's lines as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(EXAMPLE_HEADING):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser with storypost's help layout; its subcommands are Parsers too
    (argparse makes them of their parent's class)."""

    def __init__(
        self, *, formatter_class: type[argparse.HelpFormatter] = HelpFormatter, **kwargs: Any
    ) -> None:
        super().__init__(formatter_class=formatter_class, **kwargs)


def subcommands(commands: Subparsers, name: str) -> Subparsers:
    """The ACTION subparsers of the `name` command (to add an action from another module)."""
    parser = commands.choices[name]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise LookupError(f"`storypost {name}` has no subcommands")
