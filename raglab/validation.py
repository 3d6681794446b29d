"""One way to check what a caller passes in, so every entry point speaks the same way.

Modelled on scikit-learn's `check_scalar`: a value of the wrong type raises `TypeError`,
a value of the right type outside its bounds raises `ValueError`, and both messages have
one shape that names the parameter, the rule and the value:

    k must be an integer >= 1 (got k=0)

>>> check_int("k", 3, minimum=1)
3
>>> check_int("k", 0, minimum=1)
Traceback (most recent call last):
...
ValueError: k must be an integer >= 1 (got k=0)
>>> check_int("dim", 2.0, minimum=1)
Traceback (most recent call last):
...
TypeError: dim must be an integer >= 1 (got dim=2.0)
>>> check_number("b", 1.5, minimum=0, maximum=1)
Traceback (most recent call last):
...
ValueError: b must be a finite number from 0 to 1 (got b=1.5)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable


def _rule(kind: str, minimum: float | None, maximum: float | None, above: float | None) -> str:
    """The rule in words: "an integer >= 1", "a finite number from 0 to 1", ..."""
    if minimum is not None and maximum is not None:
        return f"{kind} from {minimum} to {maximum}"
    bounds = [f"> {above}"] if above is not None else []
    bounds += [f">= {minimum}"] if minimum is not None else []
    bounds += [f"<= {maximum}"] if maximum is not None else []
    return " ".join([kind, *bounds])


def _within(
    value: float, minimum: float | None, maximum: float | None, above: float | None
) -> bool:
    return (
        (minimum is None or value >= minimum)
        and (maximum is None or value <= maximum)
        and (above is None or value > above)
    )


def check_int(
    name: str, value: object, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """`value` as an int, if it is a whole number (numpy's included) within the bounds.

    subtle: `bool` is an `int` in Python, but `k=True` is surely a mistake, so it is refused.
    """
    rule = _rule("an integer", minimum, maximum, None)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {rule} (got {name}={value!r})")
    number = int(value)
    if not _within(number, minimum, maximum, None):
        raise ValueError(f"{name} must be {rule} (got {name}={value!r})")
    return number


def check_number(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
) -> float:
    """`value` as a float, if it is a finite real number within the bounds.

    `minimum` and `maximum` are inclusive; `above` is a strict lower bound (timeout > 0).
    NaN and infinity are refused: no setting of raglab means anything at either.
    """
    rule = _rule("a finite number", minimum, maximum, above)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {rule} (got {name}={value!r})")
    number = float(value)
    if not (math.isfinite(number) and _within(number, minimum, maximum, above)):
        raise ValueError(f"{name} must be {rule} (got {name}={value!r})")
    return number


def check_texts(name: str, texts: object) -> list[str]:
    """`texts` as a list of strings; one bare string is refused (read letter by letter)."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise TypeError(f"{name} must be a list of strings (got {name}={texts!r:.60})")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{i}] must be a str (got {type(text).__name__}: {text!r:.60})")
    return texts
