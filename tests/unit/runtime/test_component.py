"""`@component`: a class declared by its collaborators stores them, equals only itself and
keeps them out of its repr."""

from __future__ import annotations

from dataclasses import KW_ONLY, field

from storypost_runtime.component import component


@component
class _Client:
    _: KW_ONLY
    url: str
    secret: str
    timeout: float = 5.0
    seen: list[str] = field(init=False, default_factory=list)


def test_the_constructor_stores_each_collaborator_and_derived_state_starts_fresh() -> None:
    one = _Client(url="http://127.0.0.1:1", secret="s3cr3t", timeout=2.0)
    two = _Client(url="http://127.0.0.1:1", secret="s3cr3t")
    one.seen.append("x")
    assert (one.url, one.secret, one.timeout, one.seen) == (
        "http://127.0.0.1:1",
        "s3cr3t",
        2.0,
        ["x"],
    )
    assert (two.timeout, two.seen) == (5.0, [])


def test_a_component_equals_only_itself_and_is_hashable() -> None:
    one = _Client(url="u", secret="s")
    same_fields = _Client(url="u", secret="s")
    assert one == one
    assert one != same_fields
    assert len({one, same_fields}) == 2


def test_its_repr_names_no_collaborator() -> None:
    text = repr(_Client(url="http://127.0.0.1:1", secret="s3cr3t"))
    assert "s3cr3t" not in text
    assert "127.0.0.1" not in text
