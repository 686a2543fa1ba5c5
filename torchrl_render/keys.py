"""TensorDict keys as the config and the files spell them: ``"a.b"`` is the nested key ``("a", "b")``.

Example:
    >>> parse_nested_key("next.reward"), key_to_string(("next", "reward"))
    (('next', 'reward'), 'next.reward')
"""

from __future__ import annotations

from .errors import ConfigError

__all__ = ["NestedKey", "key_to_string", "parse_nested_key"]

NestedKey = str | tuple[str, ...]


def parse_nested_key(value: object, name: str = "key") -> NestedKey:
    """``"a.b"`` -> ``("a", "b")``; strings without a dot and tuples pass through.

    Example:
        >>> parse_nested_key("next.reward"), parse_nested_key("reward"), parse_nested_key(["a", "b"])
        (('next', 'reward'), 'reward', ('a', 'b'))
    """
    if isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):
        return value if len(value) > 1 else value[0]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return parse_nested_key(tuple(value), name)
    if isinstance(value, str):
        parts = tuple(p.strip() for p in value.split(".") if p.strip())
        if parts:
            return parts if len(parts) > 1 else parts[0]
    raise ConfigError(f"{name} is not a TensorDict key", expected="a name, 'a.b' for nested, or a tuple of names",
                      got=repr(value), fix=f"pass e.g. {name}='observation'")


def key_to_string(key: NestedKey) -> str:
    """The dotted form of a nested key.

    Example:
        >>> key_to_string(("next", "reward"))
        'next.reward'
    """
    return ".".join(key) if isinstance(key, tuple) else str(key)
