"""Plugins that break their contracts, one per entry point; the host must survive every one.

Each behaves unless an environment variable says otherwise, so that the other tests of the session see
well-behaved plugins only: ``HOSTILE`` (comma-separated) names the registries that break, ``HOSTILE_LOOP``
the loop hook that misbehaves and how.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from rlcore import hookimpl


def _on(name: str) -> bool:
    return name in os.environ.get("HOSTILE", "").split(",")


class returns_a_string:
    """Its logger registry is a string."""

    @staticmethod
    @hookimpl
    def rl_register_loggers() -> Any:
        return "csv" if _on("str") else None


class registers_non_callables:
    """Its hook registry maps a name to a number."""

    @staticmethod
    @hookimpl
    def rl_register_hooks() -> Any:
        return {"noncallable": 42} if _on("noncallable") else None


class raises:
    """Its env-wrapper registry raises."""

    @staticmethod
    @hookimpl
    def rl_register_env_wrappers() -> Any:
        if _on("raises"):
            raise RuntimeError("the registry exploded")
        return None


class misbehaves:
    """Each of the ten loop hooks, well-behaved unless ``HOSTILE_LOOP`` names it as ``HOW@HOOK``
    (``exit@rl_post_loss``): from the second batch on, that hook misbehaves ``HOW`` (see :func:`_misbehave`)."""

    @staticmethod
    @hookimpl
    def rl_batch_process(trainer: Any, batch: Any) -> Any:
        return _misbehave("rl_batch_process", trainer, wrong=[batch])

    @staticmethod
    @hookimpl
    def rl_pre_steps_log(trainer: Any) -> Any:
        return _misbehave("rl_pre_steps_log", trainer, wrong="fps=100")

    @staticmethod
    @hookimpl
    def rl_pre_optim_steps(trainer: Any) -> None:
        _misbehave("rl_pre_optim_steps", trainer)

    @staticmethod
    @hookimpl
    def rl_process_optim_batch(trainer: Any, batch: Any) -> Any:
        return _misbehave("rl_process_optim_batch", trainer, wrong=batch.to_dict())

    @staticmethod
    @hookimpl
    def rl_post_loss(trainer: Any) -> None:
        _misbehave("rl_post_loss", trainer)

    @staticmethod
    @hookimpl
    def rl_optimizer(trainer: Any) -> Any:
        return _misbehave("rl_optimizer", trainer, wrong="stepped")

    @staticmethod
    @hookimpl
    def rl_post_optim(trainer: Any) -> None:
        _misbehave("rl_post_optim", trainer)

    @staticmethod
    @hookimpl
    def rl_post_optim_log(trainer: Any) -> Any:
        return _misbehave("rl_post_optim_log", trainer, wrong=["loss", 1.0])

    @staticmethod
    @hookimpl
    def rl_post_steps(trainer: Any) -> None:
        _misbehave("rl_post_steps", trainer)

    @staticmethod
    @hookimpl
    def rl_post_steps_log(trainer: Any) -> Any:
        return _misbehave("rl_post_steps_log", trainer, wrong="fps=100")


def _misbehave(hook: str, trainer: Any, wrong: Any = None) -> Any:
    """What ``hook`` does when ``HOSTILE_LOOP`` is ``HOW@hook`` and the run is past its first batch (64 frames).

    ``HOW``: ``raise`` a two-line error; ``exit`` (``sys.exit(0)``); ``hang`` (never return, with the file
    ``RUN_DIR/hanging`` there while it hangs); return the ``wrong`` type; or return a ``huge`` number, too large
    for a float.
    """
    how, _, where = os.environ.get("HOSTILE_LOOP", "").partition("@")
    if where != hook or trainer.collected_frames <= 64:
        return None
    if how == "raise":
        raise ZeroDivisionError("the plugin divided by zero\n(a second line, which the one-line message leaves out)")
    if how == "exit":
        sys.exit(0)
    if how == "hang":
        hanging = Path(trainer.run_dir) / "hanging"
        hanging.touch()
        try:
            while True:
                time.sleep(0.01)
        finally:
            hanging.unlink()
    if how == "type":
        return wrong
    if how == "huge":
        return {"hostile/huge": 10**400}
    raise ValueError(f"HOSTILE_LOOP: unknown misbehaviour {how!r}")
