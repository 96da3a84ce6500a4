"""rl-plugin-sac: soft actor-critic for rl-core, on rl-plugin-replay's buffer and soft target updater.

Registers the algorithm ``sac``: SAC (Haarnoja et al., 2018) for continuous (``Box``) actions,
with twin critics, a tanh-squashed Gaussian actor and a learned entropy temperature. Its
default config solves Pendulum-v1 as it is::

    rlctl config show sac
    rlctl train --algo sac --env Pendulum-v1

This module stays light: importing it (``rlctl plugins list``) imports neither torch nor
tensordict; the builder imports them when a run builds its loss.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from rl_plugin_nets import Activation, EncoderOptions
from rlcore import Algorithm, Range, hookimpl

__version__ = "0.1.0"
__all__ = ["DEFAULTS", "SACOptions", "build_sac", "rl_register_algorithms"]


@dataclass
class SACOptions(EncoderOptions):
    """The ``algo`` keys of ``sac``, with :class:`rl_plugin_nets.EncoderOptions`' for images: their CNN is
    the critics' (their loss trains it), and the actor reads its features detached, as SAC-AE and DrQ do.

    :param gamma: the discount.
    :param hidden_sizes: hidden layer widths of the actor and of each critic.
    :param net_arch: ``{pi: [..], qf: [..]}``: the actor's and the critics' own hidden widths, in place of ``hidden_sizes``.
    :param activation: the activation after each hidden layer.
    :param share_encoder: the actor reads the critics' encoder (the CNN of images, ``network``), its features detached;
        ``false``: an encoder of its own, initialised apart and trained by the actor's loss.
    :param init_alpha: the entropy temperature at the start.
    :param learn_alpha: learn the temperature so that the policy's entropy tracks ``target_entropy``; else keep ``init_alpha``.
    :param target_entropy: the entropy the temperature aims at; ``null``: minus the number of action dimensions.
    :param log_std_min: lower clamp of the actor's log standard deviation.
    :param log_std_max: upper clamp of the actor's log standard deviation.
    :param n_step: n-step returns (the replay buffer builds the n-step transitions).
    :param init_random_frames: uniformly random actions, and no optimisation step, for this many frames first.
    :param compile: the compiled update (:class:`rl_plugin_replay.CompiledUpdate`): ``false`` (the default, until it
        wins end to end: benchmarks/RESULTS.md), eager; ``null``, where it applies and pays (a CPU run of 20,000
        updates or more); ``true``, wherever it applies (else the run is refused, saying why).
    """

    gamma: Annotated[float, Range(gt=0, le=1)] = 0.99
    hidden_sizes: list[Annotated[int, Range(ge=1)]] = field(default_factory=lambda: [256, 256])
    net_arch: dict[Literal["pi", "qf"], list[Annotated[int, Range(ge=1)]]] = field(default_factory=dict)
    activation: Activation = "relu"
    share_encoder: bool = True
    init_alpha: Annotated[float, Range(gt=0)] = 1.0
    learn_alpha: bool = True
    target_entropy: float | None = None
    log_std_min: float = -20.0
    log_std_max: float = 2.0
    n_step: Annotated[int, Range(ge=1)] = 1
    init_random_frames: Annotated[int, Range(ge=0)] | None = 100
    compile: bool | None = False


#: the default config sections: Pendulum-v1 solved within 20k frames (see benchmarks/offpolicy_learning.py)
DEFAULTS: dict[str, dict[str, Any]] = {
    "env": {"id": "Pendulum-v1", "num_envs": 1},
    "collector": {"frames_per_batch": 1},
    "algo": asdict(SACOptions()),
    "optim": {"name": "adam", "lr": 1e-3, "eps": 1e-8, "weight_decay": 0.0, "lr_schedule": "constant", "lr_end": 0.0},
    "trainer": {"total_frames": 20_000, "optim_steps_per_batch": 1, "clip_norm": None, "log_interval": 1000, "save_trainer_interval": 5000},
    "hooks": {
        "replay_buffer": {"capacity": 1_000_000, "batch_size": 256, "sampler": "uniform"},
        "target_updater": {"kind": "soft", "tau": 0.005, "interval": 1},
    },
}

SUMMARY = "soft actor-critic (twin critics, tanh-Gaussian actor, learned temperature)"


def build_sac(config: dict[str, Any], observation_space: Any, action_space: Any, device: Any = "cpu") -> Any:
    """Build the SAC loss module, its actor, twin critics and target critics.

    :param config: the ``algo`` section (without ``name``).
    :param observation_space: the single env's observation space (a one-dimensional ``Box``, or images).
    :param action_space: the single env's action space (a bounded one-dimensional ``Box``).
    :param device: where the modules live.
    :raises rlcore.ConfigError: for a bad key or value, or an action space SAC does not handle.
    """
    from ._build import build_loss

    return build_loss(config, observation_space, action_space, device)


@hookimpl
def rl_register_algorithms() -> list[Algorithm]:
    """The ``sac`` algorithm."""
    return [Algorithm("sac", build_sac, DEFAULTS, SUMMARY, options=SACOptions, needs_hooks=("replay_buffer", "target_updater"))]
