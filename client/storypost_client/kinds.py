"""The names of what the status procedures report on (a light module: the CLI's parser
imports it to print its help; storypost_client.polling has the rest)."""

from typing import Literal, get_args

KindName = Literal["story", "reel", "clipapp", "social", "draft"]
KIND_NAMES: tuple[KindName, ...] = get_args(KindName)
