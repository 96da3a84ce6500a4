"""rl-core plugin: the ``early_stopping`` hook.

Turn it on in the config's ``hooks`` section::

    hooks:
      early_stopping: {target_return: 475.0, window: 20}

This module stays light (``rlctl plugins list`` imports it): the hook class, which needs torch
through :class:`rlcore.TrainerHookBase`, lives in :mod:`rl_plugin_early_stopping._hook` and is
imported only when the factory is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from rlcore import HookFactory, Range, hookimpl

if TYPE_CHECKING:
    from ._hook import EarlyStopping

__version__ = "0.1.0"
__all__ = ["early_stopping", "rl_register_hooks"]


#: an integer of at least 1 (rlcore checks the options of a config against these annotations)
Positive = Annotated[int, Range(ge=1)]


def early_stopping(
    target_return: float | None = None,
    window: Positive = 20,
    patience: Positive | None = None,
    min_delta: Annotated[float, Range(ge=0)] = 0.0,
    min_episodes: Positive | None = None,
) -> EarlyStopping:
    """Stop training once the mean return of the last ``window`` finished episodes reaches a target or stops improving.

    :param target_return: stop once the windowed mean return is at least this.
    :param window: how many of the most recent finished training episodes the mean covers.
    :param patience: stop after this many batches with finished episodes in which the windowed
        mean did not beat its best by more than ``min_delta``.
    :param min_delta: the smallest rise of the windowed mean that counts as an improvement.
    :param min_episodes: finished episodes needed before the mean is judged; default ``window``.
    :return: the hook, ready for ``register(trainer, "early_stopping")``.
    """
    from ._hook import EarlyStopping

    return EarlyStopping(
        target_return=target_return,
        window=window,
        patience=patience,
        min_delta=min_delta,
        min_episodes=min_episodes,
    )


@hookimpl
def rl_register_hooks() -> dict[str, HookFactory]:
    """Contribute the ``early_stopping`` hook (the factory imports the hook class, and torch, when called)."""
    return {"early_stopping": early_stopping}
