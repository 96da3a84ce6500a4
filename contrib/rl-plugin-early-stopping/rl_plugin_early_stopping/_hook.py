"""The ``early_stopping`` hook: a :class:`rlcore.TrainerHookBase` that calls ``trainer.stop()``.

It reads the returns of the training episodes that ended in each batch from
``trainer.collector.finished_episodes`` (what :class:`rlcore.Collector` records), keeps the last
``window`` of them, and judges their mean once per batch.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from rlcore import ConfigError, TrainerHookBase, validate_options

if TYPE_CHECKING:
    from rlcore import Trainer

#: The name this hook's values are logged under.
METRIC = "early_stopping/window_return"


class EarlyStopping(TrainerHookBase):
    """Stop training once the mean return of the last ``window`` finished episodes reaches a target or stops improving.

    Once per batch (at ``post_steps``) the returns of the episodes that ended in the batch join
    the window. When the window holds at least ``min_episodes`` returns, its mean is judged:
    training stops when it is at least ``target_return``, or when ``patience`` batches in a row
    with finished episodes did not raise it by more than ``min_delta`` above its best value.
    The mean is logged as ``early_stopping/window_return`` (at ``post_steps_log``). The window,
    the best value and the count of batches without improvement are saved in checkpoints.

    :param target_return: stop once the windowed mean return is at least this.
    :param window: how many of the most recent finished training episodes the mean covers.
    :param patience: stop after this many batches with finished episodes without improvement.
    :param min_delta: the smallest rise of the windowed mean that counts as an improvement.
    :param min_episodes: finished episodes needed before the mean is judged; default ``window``.
    :raises rlcore.ConfigError: for an option out of range, or when neither ``target_return``
        nor ``patience`` is set.
    """

    def __init__(
        self,
        target_return: float | None = None,
        window: int = 20,
        patience: int | None = None,
        min_delta: float = 0.0,
        min_episodes: int | None = None,
    ) -> None:
        from . import early_stopping  # its annotations declare the options: rlcore checks them, from a config or from here

        options = {"target_return": target_return, "window": window, "patience": patience, "min_delta": min_delta, "min_episodes": min_episodes}
        checked = validate_options("hooks.early_stopping", early_stopping, options)
        target_return, window, patience, min_delta, min_episodes = (checked[name] for name in options)
        if min_episodes is not None and min_episodes > window:
            raise ConfigError(f"hooks.early_stopping.min_episodes: must be at most window ({window}), got {min_episodes!r}")
        if target_return is None and patience is None:
            raise ConfigError("hooks.early_stopping: set target_return, patience or both")
        self.target_return = None if target_return is None else float(target_return)
        self.window = window
        self.patience = patience
        self.min_delta = float(min_delta)
        self.min_episodes = window if min_episodes is None else min_episodes
        #: the returns of the last ``window`` finished episodes, oldest first
        self.returns: deque[float] = deque(maxlen=window)
        #: the best windowed mean so far (``None`` before the first judged batch)
        self.best: float | None = None
        #: judged batches in a row without improvement
        self.bad_batches = 0
        #: why training was stopped, once it was
        self.reason: str | None = None
        self._trainer: Trainer | None = None

    @property
    def window_return(self) -> float | None:
        """The mean of the window, or ``None`` while it holds fewer than ``min_episodes`` returns."""
        if len(self.returns) < self.min_episodes:
            return None
        return sum(self.returns) / len(self.returns)

    def update(self, returns: Iterable[float]) -> bool:
        """Add the returns of the episodes that ended in one batch and judge the windowed mean.

        A batch in which no episode ended changes nothing (it is not counted against ``patience``).

        :param returns: the returns of the episodes that ended in the batch.
        :return: whether training should stop; :attr:`reason` then says why.
        """
        new = [float(value) for value in returns]
        if not new:
            return False
        self.returns.extend(new)
        mean = self.window_return
        if mean is None:
            return False
        if self.best is None or mean > self.best + self.min_delta:
            self.best, self.bad_batches = mean, 0
        else:
            self.bad_batches += 1
        if self.target_return is not None and mean >= self.target_return:
            self.reason = f"mean return of the last {len(self.returns)} episodes {mean:.4g} reached the target {self.target_return:.4g}"
            return True
        if self.patience is not None and self.bad_batches >= self.patience:
            self.reason = f"mean return of the last {len(self.returns)} episodes did not improve on {self.best:.4g} for {self.bad_batches} batches"
            return True
        return False

    # ------------------------------------------------------------------ TrainerHookBase
    def register(self, trainer: Trainer, name: str = "early_stopping") -> None:
        """Judge each batch at ``post_steps``, log at ``post_steps_log``, checkpoint the state under ``name``.

        :param trainer: the trainer to attach to.
        :param name: the key of this hook's state in checkpoints.
        """
        if not hasattr(trainer.collector, "finished_episodes"):
            warnings.warn(
                "early_stopping: the collector has no finished_episodes, so this hook never stops training",
                stacklevel=2,
            )
        self._trainer = trainer
        trainer.register_op("post_steps", self._post_steps)
        trainer.register_op("post_steps_log", self._log)
        trainer.register_module(name, self)

    def _post_steps(self) -> None:
        trainer = self._trainer
        assert trainer is not None, "register() the hook first"
        episodes = getattr(trainer.collector, "finished_episodes", None)
        if episodes is not None and self.update(episodes[0]):
            trainer.stop(f"early_stopping: {self.reason}")

    def _log(self, batch: Any) -> dict[str, float] | None:
        mean = self.window_return
        return None if mean is None else {METRIC: mean}

    def state_dict(self) -> dict[str, Any]:
        """The window, the best mean and the count of batches without improvement (plain Python types)."""
        return {"returns": list(self.returns), "best": self.best, "bad_batches": self.bad_batches}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned; a smaller ``window`` keeps the most recent returns.

        :param state_dict: a dict from :meth:`state_dict`.
        """
        self.returns = deque((float(value) for value in state_dict["returns"]), maxlen=self.window)
        best = state_dict["best"]
        self.best = None if best is None else float(best)
        self.bad_batches = int(state_dict["bad_batches"])

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(target_return={self.target_return!r}, window={self.window!r}, "
            f"patience={self.patience!r}, min_delta={self.min_delta!r}, min_episodes={self.min_episodes!r})"
        )
