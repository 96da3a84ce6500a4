"""Plugins that break their contracts, one per entry point; the host must survive every one.

Each behaves unless ``HOSTILE`` (an environment variable, comma-separated) names it, so that the
other tests of the session see well-behaved plugins only.
"""

from __future__ import annotations

import os
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


class logs_a_string:
    """Its logging hook returns a string."""

    @staticmethod
    @hookimpl
    def rl_post_steps_log(trainer: Any) -> Any:
        return "fps=100" if _on("log") else None


class returns_a_list_from_a_data_hook:
    """Its data hook returns a list."""

    @staticmethod
    @hookimpl
    def rl_batch_process(batch: Any) -> Any:
        return [batch] if _on("data") else None


class raises_in_the_loop:
    """Its operation hook raises from the third batch on."""

    @staticmethod
    @hookimpl
    def rl_post_optim(trainer: Any) -> None:
        if _on("loop") and trainer.collected_frames >= 128:
            raise ZeroDivisionError("the plugin divided by zero\n(a second line, which the one-line message leaves out)")


class exits:
    """Its operation hook calls sys.exit(0) in the second batch, as if it could end the run as a success."""

    @staticmethod
    @hookimpl
    def rl_post_steps(trainer: Any) -> None:
        if _on("exit") and trainer.collected_frames >= 128:
            raise SystemExit(0)


class logs_a_huge_number:
    """Its logging hook returns an integer too large for a float."""

    @staticmethod
    @hookimpl
    def rl_post_steps_log(trainer: Any) -> Any:
        return {"hostile/huge": 10**400} if _on("overflow") else None


class optimizer_returns_a_string:
    """Its rl_optimizer returns a string instead of statistics."""

    @staticmethod
    @hookimpl
    def rl_optimizer(trainer: Any, losses: Any) -> Any:
        return "stepped" if _on("optimizer") else None
