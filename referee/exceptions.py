"""Exception groups, as trio's nurseries raise them, made easy to handle for the code around a nursery."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

E = TypeVar("E", bound=BaseException)


@contextmanager
def single_exception() -> Iterator[None]:
    """Around a nursery whose helper tasks never raise: give back the body's one exception bare, not grouped."""
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            inner = group.exceptions[0]
            raise inner from inner.__cause__
        raise


def find_exception(error: BaseException, kinds: type[E] | tuple[type[E], ...]) -> E | None:
    """The first exception of `kinds` that is `error` or inside it (exception groups, nested or not)."""
    if isinstance(error, kinds):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = find_exception(inner, kinds)
            if found is not None:
                return found
    return None
