"""A plugin author's mistakes, one per entry point: the host names each, and the rest of rl-core works on."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import rlcore
from rlcore import Range, hookimpl


class takes_a_first_party_name:
    """Declared under the entry-point name ``pg``, which is rl-plugin-pg's."""

    @staticmethod
    @hookimpl
    def rl_register_algorithms() -> Any:
        return []


class replaces_train:
    """Adds ``rlctl boom``, replaces ``rlctl train``, and registers an env (left out with the plugin)."""

    @staticmethod
    @hookimpl
    def rl_register_envs() -> Any:
        return {"Boom-v0": intruder_env}

    @staticmethod
    @hookimpl
    def rl_register_commands(cli: Any) -> None:
        import click

        @cli.command()
        def boom() -> None:
            click.echo("boom")

        @cli.command()
        def train() -> None:
            click.echo("not training")


class registers_csv:
    """Registers a logger under the builtin's name ``csv``."""

    @staticmethod
    @hookimpl
    def rl_register_loggers() -> Any:
        return {"csv": rlcore.Logger}


class misspells_a_hook:
    """``rl_post_step`` for ``rl_post_steps``, without ``@hookimpl`` (a function named ``rl_...`` implements a hook)."""

    @staticmethod
    def rl_post_step(trainer: Any) -> None:
        raise AssertionError("never called")


class _Typo:
    @hookimpl
    def rl_post_step(self, trainer: Any) -> None:
        raise AssertionError("never called")


class _Counts:
    calls = 0

    def rl_post_steps(self) -> None:  # no @hookimpl: still the hook
        _Counts.calls += 1


def _raises(level: int = 1) -> Any:
    raise ValueError("level must be even")


def intruder_env(length: Annotated[int, Range(ge=1)] = 5, render_mode: str | None = None) -> Any:
    """CartPole whose episodes end after ``length`` steps."""
    import gymnasium

    return gymnasium.make("CartPole-v1", max_episode_steps=length, render_mode=render_mode)


class _OpRaises(rlcore.TrainerHookBase):
    """An op that raises at its second call; or, with ``arity_wrong``, an op that takes what ``post_steps`` does not give."""

    def __init__(self, arity_wrong: bool = False) -> None:
        self.arity_wrong, self.calls = arity_wrong, 0

    def register(self, trainer: Any, name: str) -> None:
        trainer.register_op("post_steps", (lambda batch: None) if self.arity_wrong else self.step)

    def step(self) -> None:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("op broke")

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class _Hangs:
    """A hook whose ``rl_post_optim`` never returns once the run has collected more than ``frames`` (a stuck plugin);
    it touches ``RUN_DIR/hanging`` when it starts to hang."""

    def __init__(self, frames: int = 64) -> None:
        self.frames = frames

    @hookimpl
    def rl_post_optim(self, trainer: Any) -> None:
        if trainer.collected_frames > self.frames:
            (Path(trainer.run_dir) / "hanging").touch()
            while True:
                time.sleep(0.05)


def _needs_a_module() -> Any:
    """A hook whose dependency is not installed."""
    import nosuch_dependency  # type: ignore[import-not-found]

    return nosuch_dependency.Hook()


def _breaks_in_step(env: Any) -> Any:
    """A wrapper whose step raises at the fifth step."""
    import gymnasium

    class BreaksInStep(gymnasium.vector.VectorWrapper):
        steps = 0

        def step(self, actions: Any) -> Any:
            self.steps += 1
            if self.steps == 5:
                raise ValueError("wrapper broke")
            return self.env.step(actions)

    return BreaksInStep(env)


class factories:
    """Hook and wrapper factories that return what they must not, and an env with a declared option."""

    @staticmethod
    @hookimpl
    def rl_register_hooks() -> Any:
        return {"returns_none": lambda: None, "returns_int": lambda: 3, "raises": _raises, "typo": _Typo, "counts": _Counts, "op_raises": _OpRaises, "needs_a_module": _needs_a_module, "hangs": _Hangs}

    @staticmethod
    @hookimpl
    def rl_register_env_wrappers() -> Any:
        return {"returns_none": lambda env: None, "breaks_in_step": _breaks_in_step}

    @staticmethod
    @hookimpl
    def rl_register_envs() -> Any:
        return {"Intruder-v0": intruder_env}
