"""The keys of a batch: TorchRL's names, and how an option names one."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import ConfigError, shown

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


def require_keys(batch: Any, keys: Iterable[str | tuple[str, ...]], where: str, reader: str) -> None:
    """Refuse in one line a batch that lacks one of ``keys`` (a ``select_keys`` hook before the reader left it out).

    :param batch: a TensorDict.
    :param keys: the keys the reader needs.
    :param where: the config key that names the reader, for the message (``algo``, ``hooks.replay_buffer``).
    :param reader: what reads them, for the message (``the policy-gradient loss``).
    :raises ConfigError: naming the first missing key and the keys the batch has.
    """
    present = set(batch.keys(include_nested=True))
    missing = [key for key in keys if key not in present]
    if missing:
        have = ", ".join(sorted(key_name(k) for k in batch.keys(include_nested=True, leaves_only=True)))
        raise ConfigError(
            f"{where}: the batch has no key {shown(key_name(missing[0]))}, which {reader} reads (the batch has: {have}); "
            "a hook before it (select_keys?) left it out"
        )


__all__ = ["REWARD_KEY", "as_key", "key_name", "require_keys"]
