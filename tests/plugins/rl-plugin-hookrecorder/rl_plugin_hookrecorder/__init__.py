"""Records every hook call (in CALLS, and in the file named by $HOOKRECORDER_LOG) and provides ``toy``."""

from __future__ import annotations

import os
from typing import Any

from rlcore import Algorithm, hookimpl

CALLS: list[str] = []
PRESET_ENV = "Acrobot-v1"  # the toy algorithm's preset applies to this env


def _record(name: str) -> None:
    CALLS.append(name)
    path = os.environ.get("HOOKRECORDER_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(name + "\n")


@hookimpl
def rl_setup(trainer: Any) -> None:
    _record("setup")


@hookimpl
def rl_shutdown(trainer: Any) -> None:
    _record("shutdown")


@hookimpl
def rl_exception(trainer: Any, exception: BaseException) -> None:
    _record(f"exception:{type(exception).__name__}")


@hookimpl
def rl_batch_process(trainer: Any, batch: Any) -> None:
    _record("batch_process")


@hookimpl
def rl_pre_steps_log(trainer: Any, batch: Any) -> dict[str, Any]:
    _record("pre_steps_log")
    return {"recorder/batch_frames": batch.numel()}


@hookimpl
def rl_pre_optim_steps(trainer: Any) -> None:
    _record("pre_optim_steps")


@hookimpl
def rl_process_optim_batch(trainer: Any, batch: Any) -> None:
    _record("process_optim_batch")


@hookimpl
def rl_post_loss(trainer: Any, batch: Any, losses: Any) -> None:
    _record("post_loss")


@hookimpl(wrapper=True)
def rl_optimizer(trainer: Any, losses: Any) -> Any:
    result = yield
    _record("optimizer")
    return result


@hookimpl
def rl_post_optim(trainer: Any) -> None:
    _record("post_optim")


@hookimpl
def rl_post_optim_log(trainer: Any, batch: Any) -> None:
    _record("post_optim_log")


@hookimpl
def rl_post_steps(trainer: Any) -> None:
    _record("post_steps")


@hookimpl
def rl_post_steps_log(trainer: Any, batch: Any) -> None:
    _record("post_steps_log")


def _build_toy(**kwargs: Any) -> Any:
    from ._toy import build

    return build(**kwargs)


@hookimpl
def rl_register_algorithms() -> list[Algorithm]:
    return [
        Algorithm(
            "toy",
            _build_toy,
            defaults={
                "algo": {"lr_scale": 1.0},
                "env": {"num_envs": 2},
                "collector": {"frames_per_batch": 64},
                "trainer": {"total_frames": 256, "progress_bar": False, "optim_steps_per_batch": 2},
            },
            summary="a toy policy gradient for tests",
            presets={PRESET_ENV: {"algo": {"lr_scale": 0.5}}},
        )
    ]


def _make_counter(start: int = 0) -> Any:
    from ._toy import Counter

    return Counter(start)


@hookimpl
def rl_register_hooks() -> dict[str, Any]:
    return {"counter": _make_counter}


def _short_cartpole(max_steps: int = 10) -> Any:
    import gymnasium

    return gymnasium.make("CartPole-v1", max_episode_steps=max_steps)


def _opaque_cartpole() -> Any:
    from ._toy import Opaque

    return Opaque(_short_cartpole(max_steps=500))


@hookimpl
def rl_register_envs() -> dict[str, Any]:
    return {"short-cartpole": _short_cartpole, "opaque-cartpole": _opaque_cartpole}


@hookimpl
def rl_register_commands(cli: Any) -> None:
    import click

    @cli.command("recorder-hello")
    @click.argument("name")
    def hello(name: str) -> None:
        """Greet NAME (a command contributed by a plugin)."""
        click.echo(f"hello {name}")
