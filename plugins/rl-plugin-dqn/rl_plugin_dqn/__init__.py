"""rl-plugin-dqn: deep Q-learning for rl-core, on rl-plugin-replay's buffer and target updater.

Registers the algorithm ``dqn``: DQN (Mnih et al., 2015) with double-DQN targets (van Hasselt
et al., 2016), dueling heads (Wang et al., 2016), n-step returns, a Huber or squared loss and
prioritized replay when the buffer samples by priority. Its default config solves CartPole-v1
as it is::

    rlctl config show dqn
    rlctl train --algo dqn --env CartPole-v1

This module stays light: importing it (``rlctl plugins list``) imports neither torch nor
tensordict; the builder imports them when a run builds its loss.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from rl_plugin_nets import Activation, EncoderOptions
from rlcore import Algorithm, Range, hookimpl

__version__ = "0.1.0"
__all__ = ["DEFAULTS", "DQNOptions", "build_dqn", "rl_register_algorithms"]

Probability = Annotated[float, Range(ge=0, le=1)]


@dataclass
class DQNOptions(EncoderOptions):
    """The ``algo`` keys of ``dqn``, with :class:`rl_plugin_nets.EncoderOptions`' for images (the Nature DQN:
    linear heads on the CNN's features).

    :param gamma: the discount.
    :param double_dqn: double DQN: the online network picks the next action, the target network values it.
    :param dueling: dueling heads, ``Q = V + A - mean(A)``, over a shared trunk.
    :param n_step: n-step returns (the replay buffer builds the n-step transitions).
    :param loss: the TD loss: ``huber`` (smooth L1) or ``mse``.
    :param hidden_sizes: hidden layer widths of the Q-network (of its trunk, when dueling); unused with a CNN.
    :param net_arch: ``{qf: [..]}``: the Q-network's hidden widths, in place of ``hidden_sizes``; with an encoder (a CNN,
        ``network``), the hidden layers of the head on its features (none by default).
    :param activation: the activation after each hidden layer.
    :param eps_init: epsilon-greedy exploration: epsilon at frame 0...
    :param eps_end: ...and from ``eps_annealing_frames`` on (linear in between).
    :param eps_annealing_frames: frames over which epsilon is annealed; ``null``: ``eps_end`` throughout.
    :param init_random_frames: uniformly random actions, and no optimisation step, for this many frames first.
    :param compile: the compiled update (:class:`rl_plugin_replay.CompiledUpdate`): ``false`` (the default, until it
        wins end to end: benchmarks/RESULTS.md), eager; ``null``, where it applies and pays (a CPU run of 20,000
        updates or more); ``true``, wherever it applies (else the run is refused, saying why).
    """

    gamma: Annotated[float, Range(gt=0, le=1)] = 0.99
    double_dqn: bool = True
    dueling: bool = False
    n_step: Annotated[int, Range(ge=1)] = 3
    loss: Literal["huber", "mse"] = "huber"
    hidden_sizes: list[Annotated[int, Range(ge=1)]] = field(default_factory=lambda: [256, 256])
    net_arch: dict[Literal["qf"], list[Annotated[int, Range(ge=1)]]] = field(default_factory=dict)
    activation: Activation = "relu"
    eps_init: Probability = 1.0
    eps_end: Probability = 0.04
    eps_annealing_frames: Annotated[int, Range(ge=0)] | None = 16_000
    init_random_frames: Annotated[int, Range(ge=0)] | None = 1_000
    compile: bool | None = False


#: the default config sections: CartPole-v1 solved within 100k frames (see benchmarks/offpolicy_learning.py)
DEFAULTS: dict[str, dict[str, Any]] = {
    "env": {"id": "CartPole-v1", "num_envs": 1},
    "collector": {"frames_per_batch": 256},
    "algo": asdict(DQNOptions()),
    "optim": {"name": "adam", "lr": 1e-3, "eps": 1e-8, "weight_decay": 0.0, "lr_schedule": "linear", "lr_end": 0.0},
    "trainer": {"total_frames": 100_000, "optim_steps_per_batch": 128, "clip_grad_norm": True, "clip_norm": 10.0},
    "hooks": {
        "replay_buffer": {"capacity": 100_000, "batch_size": 64, "sampler": "uniform"},
        "target_updater": {"kind": "hard", "interval": 128},
    },
}

SUMMARY = "deep Q-network (double DQN, dueling heads, n-step, prioritized replay)"


def build_dqn(config: dict[str, Any], observation_space: Any, action_space: Any, device: Any = "cpu") -> Any:
    """Build the DQN loss module, its Q-network and its epsilon-greedy collection policy.

    :param config: the ``algo`` section (without ``name``).
    :param observation_space: the single env's observation space (a ``Box``).
    :param action_space: the single env's action space (``Discrete``).
    :param device: where the modules live.
    :raises rlcore.ConfigError: for a bad key or value, or a non-discrete action space.
    """
    from ._build import build_loss

    return build_loss(config, observation_space, action_space, device)


@hookimpl
def rl_register_algorithms() -> list[Algorithm]:
    """The ``dqn`` algorithm."""
    return [Algorithm("dqn", build_dqn, DEFAULTS, SUMMARY, options=DQNOptions, needs_hooks=("replay_buffer", "target_updater"))]
