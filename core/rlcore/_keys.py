"""The keys of a batch: TorchRL's names, and how an option names one."""

from __future__ import annotations

from typing import Any

#: a transition's reward in a collected batch (TorchRL's key)
REWARD_KEY = ("next", "reward")


def as_key(key: Any) -> str | tuple[str, ...]:
    """A batch key as tensordict takes it: ``"next.reward"``, ``["next", "reward"]`` and ``("next", "reward")``
    are ``("next", "reward")``; ``"observation"`` stays a string.

    :param key: a string, dotted for nested keys, or a sequence of strings.
    """
    if isinstance(key, (list, tuple)):
        return tuple(key) if len(key) > 1 else str(key[0])
    return tuple(key.split(".")) if "." in key else key


def key_name(key: str | tuple[str, ...]) -> str:
    """A key as one string, dotted for nested keys (``next.reward``): how it is named in logs and messages.

    :param key: a key as tensordict takes it.
    """
    return ".".join(key) if isinstance(key, tuple) else key


__all__ = ["REWARD_KEY", "as_key", "key_name"]
