"""rl-plugin-td3: TD3 and DDPG for rl-core, on rl-plugin-replay's buffer, soft target updater and exploration noise.

Registers two algorithms for continuous (``Box``) actions, one loss module between them:

- ``td3``: TD3 (Fujimoto et al., 2018): twin critics with clipped double-Q targets, target policy
  smoothing, the actor and the targets updated every ``policy_delay`` critic updates;
- ``ddpg``: DDPG (Lillicrap et al., 2016): the same module with ``twin: false`` (one critic),
  ``policy_delay: 1`` and ``target_noise: 0``.

Both act with a deterministic actor plus rl-plugin-replay's exploration noise (``GaussianNoise`` or
``OrnsteinUhlenbeck``, chosen by ``algo.exploration``), after ``init_random_frames`` uniformly
random frames. Their default configs solve Pendulum-v1 as they are::

    rlctl config show td3
    rlctl train --algo td3 --env Pendulum-v1

This module stays light: importing it (``rlctl plugins list``) imports neither torch nor
tensordict; the builder imports them when a run builds its loss.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from rl_plugin_nets import Activation, EncoderOptions
from rlcore import Algorithm, Range, hookimpl

__version__ = "0.1.0"
__all__ = ["DDPG_DEFAULTS", "DEFAULTS", "TD3Options", "build_ddpg", "build_td3", "rl_register_algorithms"]

NonNegative = Annotated[float, Range(ge=0)]


@dataclass
class TD3Options(EncoderOptions):
    """The ``algo`` keys of ``td3`` and ``ddpg``, with :class:`rl_plugin_nets.EncoderOptions`' for images: their CNN
    is the critics' (their loss trains it), and the actor reads its features detached, as SAC's does.

    :param gamma: the discount.
    :param hidden_sizes: hidden layer widths of the actor and of each critic.
    :param net_arch: ``{pi: [..], qf: [..]}``: the actor's and the critics' own hidden widths, in place of ``hidden_sizes``.
    :param activation: the activation after each hidden layer.
    :param share_encoder: the actor reads the critics' encoder (the CNN of images, ``network``), its features detached;
        ``false``: an encoder of its own, initialised apart and trained by the actor's loss.
    :param twin: two critics and the clipped double-Q target ``min(Q'_1, Q'_2)`` (TD3); ``false``: one critic (DDPG).
    :param policy_delay: update the actor once every this many critic updates (TD3: 2; DDPG: 1); set
        ``hooks.target_updater.interval`` to the same, so that the targets move with the actor.
    :param target_noise: target policy smoothing: the standard deviation of the Gaussian noise on the
        target actor's action, in units of half the action bounds' width (TD3: 0.2; DDPG: 0).
    :param noise_clip: the smoothing noise is clipped to ``[-noise_clip, noise_clip]`` (same units).
    :param exploration: the collection noise on the actor's action: ``gaussian`` (independent at each
        step) or ``ou`` (an Ornstein-Uhlenbeck process per env, temporally correlated).
    :param exploration_sigma: the Gaussian noise's standard deviation, or the OU process's diffusion
        ``sigma``, in units of half the action bounds' width.
    :param exploration_sigma_end: anneal the noise linearly to this over ``exploration_annealing_frames``; ``null``: constant.
    :param exploration_annealing_frames: frames of the annealing (after which the noise stays at ``exploration_sigma_end``).
    :param ou_theta: the OU process's mean reversion rate.
    :param ou_dt: the OU process's time step (``x += theta (0 - x) dt + sigma sqrt(dt) N(0, 1)``).
    :param n_step: n-step returns (the replay buffer builds the n-step transitions).
    :param init_random_frames: uniformly random actions, and no optimisation step, for this many frames first.
    """

    gamma: Annotated[float, Range(gt=0, le=1)] = 0.98
    hidden_sizes: list[Annotated[int, Range(ge=1)]] = field(default_factory=lambda: [256, 256])
    net_arch: dict[Literal["pi", "qf"], list[Annotated[int, Range(ge=1)]]] = field(default_factory=dict)
    activation: Activation = "relu"
    share_encoder: bool = True
    twin: bool = True
    policy_delay: Annotated[int, Range(ge=1)] = 2
    target_noise: NonNegative = 0.2
    noise_clip: NonNegative = 0.5
    exploration: Literal["gaussian", "ou"] = "gaussian"
    exploration_sigma: NonNegative = 0.1
    exploration_sigma_end: NonNegative | None = None
    exploration_annealing_frames: Annotated[int, Range(ge=1)] | None = None
    ou_theta: NonNegative = 0.15
    ou_dt: Annotated[float, Range(gt=0)] = 1e-2
    n_step: Annotated[int, Range(ge=1)] = 1
    init_random_frames: Annotated[int, Range(ge=0)] | None = 1_000


def _defaults(options: TD3Options, interval: int) -> dict[str, dict[str, Any]]:
    return {
        "env": {"id": "Pendulum-v1", "num_envs": 1},
        "collector": {"frames_per_batch": 1},
        "algo": asdict(options),
        "optim": {"name": "adam", "lr": 1e-3, "eps": 1e-8, "weight_decay": 0.0, "lr_schedule": "constant", "lr_end": 0.0},
        "trainer": {"total_frames": 20_000, "optim_steps_per_batch": 1, "clip_norm": None, "log_interval": 1000, "save_trainer_interval": 5000},
        "hooks": {
            "replay_buffer": {"capacity": 1_000_000, "batch_size": 256, "sampler": "uniform"},
            "target_updater": {"kind": "soft", "tau": 0.005, "interval": interval},
        },
    }


#: ``td3``'s default config sections: Pendulum-v1 solved within 20k frames; the targets move with the (delayed) actor
DEFAULTS: dict[str, dict[str, Any]] = _defaults(TD3Options(), interval=TD3Options.policy_delay)
#: ``ddpg``'s: one critic, no delay, no target smoothing, and the paper's Ornstein-Uhlenbeck noise
#: (``theta 0.15``, ``sigma 0.2``, unit time step); the rest as ``td3``'s
DDPG_DEFAULTS: dict[str, dict[str, Any]] = _defaults(
    TD3Options(twin=False, policy_delay=1, target_noise=0.0, exploration="ou", exploration_sigma=0.2, ou_theta=0.15, ou_dt=1.0), interval=1
)

TD3_SUMMARY = "TD3 (twin critics, clipped double-Q, target smoothing, delayed actor; Gaussian or OU exploration)"
DDPG_SUMMARY = "DDPG (deterministic actor, one critic; Gaussian or OU exploration)"


def build_td3(config: dict[str, Any], observation_space: Any, action_space: Any, device: Any = "cpu") -> Any:
    """Build the TD3 (or DDPG) loss module: its actor, critics, their targets and the exploring collection policy.

    :param config: the ``algo`` section (``ddpg`` is ``td3`` with its own defaults).
    :param observation_space: the single env's observation space (a one-dimensional ``Box``, or images).
    :param action_space: the single env's action space (a bounded one-dimensional ``Box``).
    :param device: where the modules live.
    :raises rlcore.ConfigError: for a bad key or value, or an action space TD3 does not handle.
    """
    from ._build import build_loss

    return build_loss(config, observation_space, action_space, device)


def build_ddpg(config: dict[str, Any], observation_space: Any, action_space: Any, device: Any = "cpu") -> Any:
    """Build the DDPG loss module: :func:`build_td3`'s, its errors naming ``ddpg``."""
    from ._build import build_loss

    return build_loss(config, observation_space, action_space, device, algorithm="ddpg")


@hookimpl
def rl_register_algorithms() -> list[Algorithm]:
    """The ``td3`` and ``ddpg`` algorithms."""
    hooks = ("replay_buffer", "target_updater")
    return [
        Algorithm("td3", build_td3, DEFAULTS, TD3_SUMMARY, options=TD3Options, needs_hooks=hooks),
        Algorithm("ddpg", build_ddpg, DDPG_DEFAULTS, DDPG_SUMMARY, options=TD3Options, needs_hooks=hooks),
    ]
