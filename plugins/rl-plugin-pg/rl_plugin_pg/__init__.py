"""rl-plugin-pg: the policy-gradient family for rl-core.

Registers five algorithms, each a loss module with its actor-critic policy and default config:

========  =====================================================================
``pg``      vanilla policy gradient: REINFORCE with a learned baseline
``a2c``     advantage actor-critic (synchronous, short rollouts)
``spg``     surrogate policy gradient: ratio x advantage, several epochs
``ppo``     PPO with a clipped ratio
``ppo-kl``  PPO with an adaptive KL penalty
========  =====================================================================

This module stays light: importing it (``rlctl plugins list``) imports neither torch nor
tensordict; the builders import the heavy modules when a run builds its loss.
"""

from __future__ import annotations

from typing import Any

from rlcore import Algorithm, hookimpl

__version__ = "0.1.0"

#: algorithm name -> the loss objective it uses (see ``rl_plugin_pg._losses.OBJECTIVES``)
OBJECTIVE = {"pg": "pg", "a2c": "pg", "spg": "surrogate", "ppo": "clip", "ppo-kl": "kl"}

#: keys every algorithm's ``algo`` section accepts, with their shared defaults
_COMMON: dict[str, Any] = {
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "epochs": 4,
    "minibatches": 4,
    "normalize_advantage": True,
    "value_coef": 0.5,
    "value_clip_range": None,
    "entropy_coef": 0.0,
    # the actor-critic
    "hidden_sizes": [64, 64],
    "activation": "tanh",
    "shared_trunk": False,
    "log_std_init": 0.0,
    "action_bounds": "clip",
    # {coefficient: final value}, annealed linearly over trainer.total_frames
    "schedule": {},
}
_OPTIM: dict[str, Any] = {"name": "adam", "lr": 3e-4, "eps": 1e-5, "weight_decay": 0.0, "lr_schedule": "linear", "lr_end": 0.0}
_TRAINER: dict[str, Any] = {"clip_grad_norm": True, "clip_norm": 0.5, "optim_steps_per_batch": None}


def _defaults(algo: dict[str, Any], env: dict[str, Any], frames_per_batch: int, optim: dict[str, Any], total_frames: int) -> dict[str, dict[str, Any]]:
    return {
        "env": env,
        "collector": {"frames_per_batch": frames_per_batch},
        "algo": {**_COMMON, **algo},
        "optim": {**_OPTIM, **optim},
        "trainer": {**_TRAINER, "total_frames": total_frames},
    }


#: the default config sections of each algorithm (they solve classic control as they are)
DEFAULTS: dict[str, dict[str, dict[str, Any]]] = {
    "pg": _defaults(
        {"gae_lambda": 1.0, "epochs": 1, "minibatches": 1},
        {"num_envs": 8},
        1024,
        {"lr": 3e-3},
        500_000,
    ),
    "a2c": _defaults(
        {"gae_lambda": 1.0, "epochs": 1, "minibatches": 1, "normalize_advantage": False},
        {"num_envs": 8},
        40,
        {"lr": 7e-4},
        500_000,
    ),
    "spg": _defaults(
        {"epochs": 4, "minibatches": 4},
        {"num_envs": 8},
        1024,
        {"lr": 3e-4},
        500_000,
    ),
    "ppo": _defaults(
        {"gamma": 0.98, "gae_lambda": 0.8, "epochs": 10, "minibatches": 1, "clip_range": 0.2, "schedule": {"clip_range": 0.0}},
        {"num_envs": 8},
        256,
        {"lr": 1e-3},
        100_000,
    ),
    "ppo-kl": _defaults(
        {"gamma": 0.98, "gae_lambda": 0.8, "epochs": 10, "minibatches": 1, "kl_target": 0.01, "kl_penalty": 1.0, "kl_stop_factor": 4.0},
        {"num_envs": 8},
        256,
        {"lr": 1e-3},
        500_000,
    ),
}

#: tuned sections per env, merged over an algorithm's defaults when the run uses that env
PRESETS: dict[str, dict[str, dict[str, dict[str, Any]]]] = {
    "ppo": {
        "Pendulum-v1": {
            "env": {"num_envs": 4, "wrappers": {"normalize_reward": {"gamma": 0.9}}},
            "collector": {"frames_per_batch": 4096},
            "algo": {"gamma": 0.9, "gae_lambda": 0.95, "epochs": 10, "minibatches": 64, "schedule": {"clip_range": 0.2}},
            "trainer": {"total_frames": 300_000},
        },
    },
}

SUMMARY = {
    "pg": "vanilla policy gradient (REINFORCE with a learned baseline)",
    "a2c": "advantage actor-critic",
    "spg": "surrogate policy gradient (ratio x advantage)",
    "ppo": "proximal policy optimisation, clipped ratio",
    "ppo-kl": "proximal policy optimisation, adaptive KL penalty",
}


def _builder(name: str) -> Any:
    def build(config: dict[str, Any], observation_space: Any, action_space: Any, device: Any = "cpu") -> Any:
        from ._build import build_loss

        return build_loss(name, config, observation_space, action_space, device)

    build.__name__ = build.__qualname__ = f"build_{name.replace('-', '_')}"
    build.__doc__ = f"Build the {SUMMARY[name]} loss module and its actor-critic policy."
    return build


@hookimpl
def rl_register_algorithms() -> list[Algorithm]:
    """The five algorithms of the policy-gradient family."""
    return [Algorithm(name, _builder(name), DEFAULTS[name], SUMMARY[name], PRESETS.get(name, {})) for name in OBJECTIVE]
