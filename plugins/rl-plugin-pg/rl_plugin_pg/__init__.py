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

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from rl_plugin_nets import Activation, EncoderOptions
from rlcore import Algorithm, Range, hookimpl

__version__ = "0.1.0"

__all__ = ["DEFAULTS", "OBJECTIVE", "OPTIONS", "PGOptions", "PPOKLOptions", "PPOOptions", "build_pg", "rl_register_algorithms"]

#: algorithm name -> the loss objective it uses (see ``rl_plugin_pg._losses.OBJECTIVES``)
OBJECTIVE = {"pg": "pg", "a2c": "pg", "spg": "surrogate", "ppo": "clip", "ppo-kl": "kl"}

Unit = Annotated[float, Range(ge=0, le=1)]
NonNegative = Annotated[float, Range(ge=0)]
Positive = Annotated[float, Range(gt=0)]


@dataclass
class PGOptions(EncoderOptions):
    """The ``algo`` keys of every algorithm of the family, with their shared defaults, and
    :class:`rl_plugin_nets.EncoderOptions`' for images (the CNN feeds the actor's and the critic's heads).

    :param gamma: the discount.
    :param gae_lambda: GAE's lambda (1: Monte-Carlo returns minus the baseline).
    :param epochs: passes over each batch.
    :param minibatches: minibatches per epoch.
    :param normalize_advantage: standardise advantages within each minibatch.
    :param value_coef: weight of the value loss.
    :param value_clip_range: clip new values to this distance from the collected ones; ``null``: plain MSE.
    :param entropy_coef: weight of the entropy bonus.
    :param hidden_sizes: widths of the actor's and the critic's hidden layers (of the trunk, when shared).
    :param net_arch: each head's own hidden widths, ``{pi: [..], vf: [..]}``: of the actor's and the critic's MLPs, in
        place of ``hidden_sizes``; with a shared trunk or an encoder, the hidden layers of each head on its features.
    :param activation: the hidden layers' activation.
    :param shared_trunk: one trunk for the actor and the critic, with two linear heads.
    :param share_encoder: the actor and the critic read one encoder (the CNN of images, ``network``); ``false``: each its own.
    :param log_std_init: initial log standard deviation of Gaussian actions.
    :param action_bounds: ``clip`` Gaussian samples to a ``Box``'s bounds, or squash them with ``tanh``.
    :param recurrent: an LSTM between the features and the heads (recurrent PPO), ``{hidden_size: 128, num_layers: 1,
        seq_len: ..}``; each env's rollout in a batch is cut into sequences of ``seq_len`` steps (by default the whole
        rollout), which the minibatches shuffle, and along which the LSTM is run again from the state the sequence began
        with (truncated back-propagation through time); ``null``: a feed-forward policy.
    :param schedule: ``{coefficient: final value}``, annealed linearly over ``trainer.total_frames``;
        a ``null`` value takes a default schedule off (``--set algo.schedule.clip_range=null``).
    """

    gamma: Annotated[float, Range(gt=0, le=1)] = 0.99
    gae_lambda: Unit = 0.95
    epochs: Annotated[int, Range(ge=1)] = 4
    minibatches: Annotated[int, Range(ge=1)] = 4
    normalize_advantage: bool = True
    value_coef: NonNegative = 0.5
    value_clip_range: Positive | None = None
    entropy_coef: NonNegative = 0.0
    hidden_sizes: list[Annotated[int, Range(ge=1)]] = field(default_factory=lambda: [64, 64])
    net_arch: dict[Literal["pi", "vf"], list[Annotated[int, Range(ge=1)]]] = field(default_factory=dict)
    activation: Activation = "tanh"
    shared_trunk: bool = False
    share_encoder: bool = True
    log_std_init: float = 0.0
    action_bounds: Literal["clip", "tanh"] = "clip"
    recurrent: dict[Literal["hidden_size", "num_layers", "seq_len"], Annotated[int, Range(ge=1)]] | None = None
    schedule: dict[Literal["entropy_coef", "value_coef", "clip_range", "value_clip_range", "kl_target"], NonNegative | None] = field(default_factory=dict)


@dataclass
class PPOOptions(PGOptions):
    """PPO's keys: :class:`PGOptions` and the ratio's clip range.

    :param clip_range: the ratio is clipped to ``[1 - clip_range, 1 + clip_range]``.
    """

    clip_range: Positive = 0.2


@dataclass
class PPOKLOptions(PGOptions):
    """Adaptive-KL PPO's keys: :class:`PGOptions` and the KL penalty's.

    :param kl_target: the target KL per batch.
    :param kl_penalty: the initial penalty coefficient.
    :param kl_stop_factor: stop a batch's steps once a minibatch's KL exceeds this times the target; ``null``: never.
    """

    kl_target: Positive = 0.01
    kl_penalty: NonNegative = 1.0
    kl_stop_factor: Positive | None = None


#: each algorithm's ``algo`` options
OPTIONS: dict[str, type[PGOptions]] = {"pg": PGOptions, "a2c": PGOptions, "spg": PGOptions, "ppo": PPOOptions, "ppo-kl": PPOKLOptions}
_OPTIM: dict[str, Any] = {"name": "adam", "lr": 3e-4, "eps": 1e-5, "weight_decay": 0.0, "lr_schedule": "linear", "lr_end": 0.0}
_TRAINER: dict[str, Any] = {"clip_grad_norm": True, "clip_norm": 0.5, "optim_steps_per_batch": None}


def _defaults(algo: dict[str, Any], env: dict[str, Any], frames_per_batch: int, optim: dict[str, Any], total_frames: int) -> dict[str, dict[str, Any]]:
    return {
        "env": env,
        "collector": {"frames_per_batch": frames_per_batch},
        "algo": algo,
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
        {"gamma": 0.98, "gae_lambda": 0.8, "epochs": 20, "minibatches": 1, "clip_range": 0.2, "schedule": {"clip_range": 0.0}},
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


def build_pg(name: str, config: dict[str, Any], observation_space: Any, action_space: Any, device: Any = "cpu") -> Any:
    """Build the loss module of algorithm ``name`` (``pg``, ``a2c``, ``spg``, ``ppo``, ``ppo-kl``) and its actor-critic
    policy (``loss.policy``) for an env's spaces, as ``rl_plugin_dqn.build_dqn`` does for DQN.

    :param name: the algorithm.
    :param config: the ``algo`` section (without ``name``); missing keys take the algorithm's defaults.
    :param observation_space: the single env's observation space.
    :param action_space: the single env's action space.
    :param device: where the modules live.
    :raises rlcore.ConfigError: for spaces the family does not handle, or a bad encoder option.
    :raises ValueError: for a key the algorithm does not accept.
    """
    from ._build import build_loss

    return build_loss(name, config, observation_space, action_space, device)


def _builder(name: str) -> Any:
    def build(config: dict[str, Any], observation_space: Any, action_space: Any, device: Any = "cpu") -> Any:
        return build_pg(name, config, observation_space, action_space, device)

    build.__name__ = build.__qualname__ = f"build_{name.replace('-', '_')}"
    build.__doc__ = f"Build the {SUMMARY[name]} loss module and its actor-critic policy."
    return build


@hookimpl
def rl_register_algorithms() -> list[Algorithm]:
    """The five algorithms of the policy-gradient family."""
    return [Algorithm(name, _builder(name), DEFAULTS[name], SUMMARY[name], PRESETS.get(name, {}), OPTIONS[name]) for name in OBJECTIVE]
