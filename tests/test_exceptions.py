"""Exception groups from trio's nurseries: one exception given back bare, and a kind found at any depth."""

from __future__ import annotations

import pytest

from referee.exceptions import find_exception, single_exception


def test_a_group_of_one_is_given_back_bare_and_a_group_of_two_stays_a_group() -> None:
    with pytest.raises(KeyError), single_exception():
        raise ExceptionGroup("one", [KeyError("k")])
    with pytest.raises(ExceptionGroup), single_exception():
        raise ExceptionGroup("two", [KeyError("k"), ValueError("v")])


def test_find_exception_looks_inside_nested_groups() -> None:
    interrupt = KeyboardInterrupt()
    nested = BaseExceptionGroup("outer", [ValueError("v"), BaseExceptionGroup("inner", [interrupt])])
    assert find_exception(nested, KeyboardInterrupt) is interrupt
    assert find_exception(nested, (OSError, KeyError)) is None
    assert find_exception(interrupt, KeyboardInterrupt) is interrupt
