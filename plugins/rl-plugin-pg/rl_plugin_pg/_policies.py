"""Actor-critic policies built from Gymnasium spaces, as ``tensordict.nn`` modules: MLPs, or a CNN for image observations.

One module holds the actor and the critic. Called on a TensorDict it acts, as the collector
needs: it reads ``observation`` and writes ``action`` and ``sample_log_prob`` (and ``raw_action``
for ``Box`` actions). It samples in ``InteractionType.RANDOM`` and acts with the distribution's
mode otherwise (``DETERMINISTIC``, ``MODE``, ... or no interaction type set).

Collection steps are small, so they do only what must be done step by step: no value is
computed there (the loss module values the whole batch in one call, see
:meth:`ActorCritic.value`), and the distributions are written with plain torch operations
rather than ``torch.distributions`` objects, whose construction and argument validation would
cost more than the network itself.

- ``Discrete(n)``: a categorical over ``n`` logits.
- ``MultiDiscrete(nvec)``: one categorical per entry, over its ``nvec[i]`` logits; the log-probability
  and the entropy are the sums over the entries.
- ``MultiBinary(n)``: ``n`` independent Bernoullis, one logit each (the mode: a positive logit).
Image observations (``uint8`` or ``bool`` boxes, channels first or last; ``encoder="auto"`` or
``"cnn"``) go through one CNN of rl-plugin-nets (the Nature-DQN CNN, or MinAtar's for small images)
shared by the actor and the critic, each a linear head on its features (CleanRL's Atari layout);
frames stay ``uint8`` until they are on the policy's device.

With ``recurrent`` an LSTM sits between the features and the heads (sb3-contrib's RecurrentPPO, CleanRL's
``ppo_atari_lstm``). Its state is TorchRL's: the policy reads ``recurrent_state_h`` and ``recurrent_state_c``
``[N, layers, hidden]`` and ``is_init``, starts the rows where ``is_init`` is true from zeros, writes the state it
began with back (the batch keeps it) and hands the next one on under ``next``, which the collector brings back at
the next step.

- ``Box``: a diagonal Gaussian with a state-independent log standard deviation. The sample
  ``raw_action`` is what the log-probability is of; ``action`` is it clipped to the bounds
  (``action_bounds="clip"``) or squashed into them with ``tanh`` (``"tanh"``). The squashing
  Jacobian depends on the sample only, so it cancels in probability ratios and is left out.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, cast

import numpy as np
import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type
from torch import nn

from rl_plugin_nets import MLP, MultiInputEncoder, float_observations
from rlcore import ConfigError

ACTION_BOUNDS = ("clip", "tanh")
#: what ``algo.recurrent`` leaves out takes these (``seq_len``: the loss's; ``None``, each env's whole rollout of a batch)
RECURRENT: dict[str, Any] = {"hidden_size": 128, "num_layers": 1, "seq_len": None}
#: the action distributions, by action space: ``Discrete``, ``MultiDiscrete``, ``MultiBinary``, ``Box``
KINDS = ("categorical", "multi_categorical", "bernoulli", "gaussian")
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def sampling() -> bool:
    """Whether the current ``tensordict.nn`` interaction type asks for a random action."""
    return interaction_type() == InteractionType.RANDOM


class ActorCritic(TensorDictModuleBase):
    """An actor and a critic over a flat observation: one MLP each (CleanRL's layout), or one shared trunk MLP
    with a linear head each; or, given an ``encoder`` (a CNN), a linear head each on the encoder's features.

    :param obs_shape: shape of one observation (flattened into the MLP's input).
    :param action_dim: number of discrete actions, of binary entries, or the size of a continuous action
        (for ``multi_categorical``: the number of entries, ``len(nvec)``).
    :param kind: the action distribution, one of :data:`KINDS`.
    :param nvec: the number of choices of each entry of ``multi_categorical`` actions.
    :param hidden_sizes: hidden layer widths of each MLP (of the trunk, when shared).
    :param net_arch: ``{"pi": [..], "vf": [..]}``: the actor's and the critic's own hidden widths, in place of
        ``hidden_sizes``; with a trunk or an encoder, the hidden layers of each head on its features (none by default).
    :param activation: a name of ``rl_plugin_nets.ACTIVATIONS``.
    :param shared_trunk: one trunk feeds both heads, instead of one MLP each.
    :param log_std_init: initial log standard deviation of a Gaussian policy.
    :param low: lower action bounds of a Gaussian policy.
    :param high: upper action bounds of a Gaussian policy.
    :param action_bounds: ``"clip"`` or ``"tanh"``: how Gaussian samples are brought into the bounds.
    :param encoder: a module ``[..., *obs_shape] -> [..., encoder.out_dim]`` shared by both heads (an
        ``rl_plugin_nets.CNN``); ``hidden_sizes``, ``activation`` and ``shared_trunk`` then do not apply.
    :param critic_encoder: the critic's own encoder, of the same width, when the heads do not share ``encoder``.
    :param lstm_hidden_size: an LSTM of this width between the features and the heads (``None``: none); the heads
        then read its output, through hidden layers of ``net_arch`` (by default ``hidden_sizes``, or none after an
        encoder or a trunk).
    :param lstm_layers: the LSTM's stacked layers.
    """

    in_keys = ["observation"]
    low: torch.Tensor  # the action bounds of a Gaussian policy (buffers)
    high: torch.Tensor

    def __init__(
        self,
        obs_shape: Sequence[int],
        action_dim: int,
        *,
        kind: str,
        nvec: Sequence[int] = (),
        hidden_sizes: Sequence[int] = (64, 64),
        net_arch: Mapping[str, Sequence[int]] | None = None,
        activation: str = "tanh",
        shared_trunk: bool = False,
        log_std_init: float = 0.0,
        low: Any = None,
        high: Any = None,
        action_bounds: str = "clip",
        encoder: nn.Module | None = None,
        critic_encoder: nn.Module | None = None,
        lstm_hidden_size: int | None = None,
        lstm_layers: int = 1,
    ) -> None:
        super().__init__()
        if action_bounds not in ACTION_BOUNDS:
            raise ValueError(f"unknown action_bounds {action_bounds!r}; valid choices: {', '.join(ACTION_BOUNDS)}")
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; valid choices: {', '.join(KINDS)}")
        self.kind = kind
        self.nvec = [int(n) for n in nvec]
        discrete = kind != "gaussian"
        self.discrete = discrete
        self.obs_ndim = len(obs_shape)
        obs_dim = int(np.prod(obs_shape))
        self.action_dim = action_dim
        self.squash = action_bounds == "tanh"
        out_keys: list[str | tuple[str]] = ["action", "sample_log_prob", *([] if discrete else ["raw_action"])]
        self.out_keys = out_keys
        self.action_key = "action" if discrete else "raw_action"
        # with a shared trunk (or an encoder), the actor and the critic are one-layer heads on its features
        self.encoder, self.critic_encoder = encoder, critic_encoder
        self.trunk = MLP([obs_dim, *hidden_sizes], activation, init="orthogonal", activate_last=True) if shared_trunk and encoder is None else None
        arch = dict(net_arch or {})
        # (a Dict's encoder hands on some entries as they are: the heads keep their hidden layers to mix them)
        encoded = (encoder is not None and not isinstance(encoder, MultiInputEncoder)) or self.trunk is not None
        features = cast(int, encoder.out_dim) if encoder is not None else self.trunk.out_dim if self.trunk is not None else obs_dim
        self.lstm: nn.LSTM | None = None
        if lstm_hidden_size is not None:
            if critic_encoder is not None:
                raise ConfigError("algo.share_encoder: false gives the critic an encoder of its own, which a recurrent policy's one LSTM cannot read")
            self.lstm = nn.LSTM(features, lstm_hidden_size, lstm_layers)
            for name, param in self.lstm.named_parameters():  # CleanRL's initialisation
                if "bias" in name:
                    nn.init.zeros_(param)
                else:
                    nn.init.orthogonal_(param, 1.0)
            self.in_keys = ["observation", "is_init", "recurrent_state_h", "recurrent_state_c"]
            handed: list[Any] = [("next", "recurrent_state_h"), ("next", "recurrent_state_c")]  # (tensordict types nested keys as 1-tuples)
            self.out_keys = [*out_keys, "recurrent_state_h", "recurrent_state_c", *handed]
            features = lstm_hidden_size
        default = [] if encoded else list(hidden_sizes)
        pi, vf = [features, *arch.get("pi", default)], [features, *arch.get("vf", default)]
        logits = sum(self.nvec) if kind == "multi_categorical" else action_dim
        self.actor_net = MLP([*pi, logits], activation, init="orthogonal", out_gain=0.01)  # near-uniform initial policy
        self.critic_net = MLP([*vf, 1], activation, init="orthogonal", out_gain=1.0)
        if not discrete:
            self.log_std = nn.Parameter(torch.full((action_dim,), float(log_std_init)))
            low_t = torch.as_tensor(np.asarray(low, dtype=np.float32)).reshape(action_dim)
            high_t = torch.as_tensor(np.asarray(high, dtype=np.float32)).reshape(action_dim)
            self.register_buffer("low", low_t, persistent=False)
            self.register_buffer("high", high_t, persistent=False)

    # ------------------------------------------------------------------ the networks
    # (modules are run through ``forward``: ``nn.Module.__call__``'s hook handling is a
    # sizeable part of a collection step)
    def heads(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Actor output (logits or Gaussian mean) and state value ``[..., 1]`` of observations ``[..., *obs_shape]``."""
        features = self._features(obs)
        critic_features = features if self.critic_encoder is None else self.critic_encoder.forward(obs)
        return self.actor_net.forward(features), self.critic_net.forward(critic_features)

    def actor(self, obs: torch.Tensor) -> torch.Tensor:
        """Actor output (logits or Gaussian mean) of observations ``[..., *obs_shape]``."""
        return self.actor_net.forward(self._features(obs))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """State values ``[..., 1]`` of observations ``[..., *obs_shape]``."""
        return self.critic_net.forward(self._features(obs) if self.critic_encoder is None else self.critic_encoder.forward(obs))

    def batch_values(self, batch: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor]:
        """State values ``[envs, time, 1]`` of a collected batch's ``observation`` and ``("next", "observation")``, in one call.

        A recurrent policy values each from the state the batch keeps with it: the one its step began with, and for
        the next observation the one that step handed on.
        """
        both = torch.cat([batch["observation"], batch["next", "observation"]], dim=1)
        if self.lstm is None:
            value, next_value = self.value(both).chunk(2, dim=1)
            return value, next_value
        h, c = (torch.cat([batch[key], batch["next", key]], dim=1) for key in ("recurrent_state_h", "recurrent_state_c"))
        lead = both.shape[:2]
        hidden, _, _ = self._remember(self._features(both).flatten(0, 1), h.flatten(0, 1), c.flatten(0, 1))
        value, next_value = self.critic_net.forward(hidden).unflatten(0, lead).chunk(2, dim=1)
        return value, next_value

    def _remember(self, features: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One LSTM step of ``features`` ``[N, F]`` from the state ``h``, ``c`` ``[N, layers, hidden]``: ``(output, h, c)``."""
        assert self.lstm is not None
        out, (h, c) = self.lstm(features.unsqueeze(0), (h.transpose(0, 1).contiguous(), c.transpose(0, 1).contiguous()))
        return out[0], h.transpose(0, 1), c.transpose(0, 1)

    def _unroll(self, batch: TensorDictBase) -> torch.Tensor:
        """The LSTM's outputs ``[S, L, hidden]`` along sequences ``[S, L]`` of a batch: from the state each sequence's first
        step kept, a row's state set to zeros where ``is_init`` starts an episode inside the sequence (truncated BPTT).

        The LSTM runs over the steps between two such starts in one call.
        """
        assert self.lstm is not None
        features = self._features(batch["observation"]).transpose(0, 1)  # [L, S, F]
        h, c = (batch[key][:, 0].transpose(0, 1).contiguous() for key in ("recurrent_state_h", "recurrent_state_c"))
        is_init = batch["is_init"].squeeze(-1).transpose(0, 1)  # [L, S]
        starts = [0, *(1 + is_init[1:].any(-1).nonzero().flatten()).tolist(), len(features)]
        outputs = []
        for begin, end in itertools.pairwise(starts):
            if begin:
                keep = (~is_init[begin]).to(h.dtype).unsqueeze(-1)
                h, c = h * keep, c * keep
            out, (h, c) = self.lstm(features[begin:end], (h, c))
            outputs.append(out)
        return torch.cat(outputs).transpose(0, 1)

    def _features(self, obs: torch.Tensor) -> torch.Tensor:
        """Flat float observations, through the shared trunk if there is one; or the encoder's features."""
        if self.encoder is not None:
            return self.encoder.forward(obs)
        if self.obs_ndim != 1:
            obs = obs.flatten(-self.obs_ndim) if self.obs_ndim else obs.unsqueeze(-1)
        obs = float_observations(obs)
        return obs if self.trunk is None else self.trunk.forward(obs)

    # ------------------------------------------------------------------ acting
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Act on ``tensordict["observation"]``: sample under ``RANDOM``, take the mode otherwise."""
        if self.lstm is None:
            out = self.actor(tensordict.get("observation"))
        else:
            features = self._features(tensordict.get("observation"))
            h, c = (tensordict.get(key, None) for key in ("recurrent_state_h", "recurrent_state_c"))
            if h is None or c is None:
                h = c = features.new_zeros((features.shape[0], self.lstm.num_layers, self.lstm.hidden_size))
            is_init = tensordict.get("is_init", None)
            if is_init is not None:  # the rows that begin an episode begin from zeros
                keep = (~is_init).to(h.dtype).unsqueeze(-1)
                h, c = h * keep, c * keep
            hidden, next_h, next_c = self._remember(features, h, c)
            out = self.actor_net.forward(hidden)
            tensordict.update({"recurrent_state_h": h, "recurrent_state_c": c, "next": {"recurrent_state_h": next_h, "recurrent_state_c": next_c}})
        random = sampling()
        if self.kind == "categorical":
            action, log_prob = _categorical(out, random)
            tensordict.set("sample_log_prob", log_prob)
            tensordict.set("action", action)
        elif self.kind == "multi_categorical":
            actions, log_probs = zip(*(_categorical(chunk, random) for chunk in out.split(self.nvec, -1)))
            tensordict.set("sample_log_prob", torch.stack(log_probs, -1).sum(-1))
            tensordict.set("action", torch.stack(actions, -1))
        elif self.kind == "bernoulli":
            ones = torch.rand_like(out) < torch.sigmoid(out) if random else out > 0
            tensordict.set("sample_log_prob", _bernoulli_log_prob(out, ones).sum(-1))
            tensordict.set("action", ones.long())
        else:
            log_std = self.log_std.expand_as(out)
            raw = out + log_std.exp() * torch.randn_like(out) if random else out
            tensordict.set("sample_log_prob", gaussian_log_prob(raw, out, log_std))
            tensordict.set("raw_action", raw)
            tensordict.set("action", self.to_bounds(raw))
        return tensordict

    def to_bounds(self, raw: torch.Tensor) -> torch.Tensor:
        """Bring Gaussian samples into the action bounds (clip or tanh squash)."""
        if self.squash:
            return self.low + (torch.tanh(raw) + 1) * (0.5 * (self.high - self.low))
        return torch.maximum(torch.minimum(raw, self.high), self.low)

    # ------------------------------------------------------------------ learning
    def evaluate(self, batch: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Log-probability and entropy of the collected actions under the current policy, and the state values.

        :param batch: rows ``[B]`` with ``observation`` and the action (``action``, or ``raw_action`` of a Gaussian);
            for a recurrent policy, sequences ``[B, L]`` with ``is_init`` and the state they began with.
        :return: ``(log_prob [B(, L)], entropy [B(, L)], value [B(, L), 1])``.
        """
        action = batch[self.action_key]
        if self.lstm is None:
            out, value = self.heads(batch["observation"])
        else:
            hidden = self._unroll(batch)
            out, value = self.actor_net.forward(hidden), self.critic_net.forward(hidden)
        if self.kind == "categorical":
            log_prob, entropy = _categorical_evaluate(out, action)
        elif self.kind == "multi_categorical":
            log_probs, entropies = zip(*(_categorical_evaluate(chunk, action[..., i]) for i, chunk in enumerate(out.split(self.nvec, -1))))
            log_prob, entropy = torch.stack(log_probs, -1).sum(-1), torch.stack(entropies, -1).sum(-1)
        elif self.kind == "bernoulli":
            log_prob = _bernoulli_log_prob(out, action).sum(-1)
            p = torch.sigmoid(out)
            entropy = -(p * F.logsigmoid(out) + (1 - p) * F.logsigmoid(-out)).sum(-1)
        else:
            log_std = self.log_std.expand_as(out)
            log_prob = gaussian_log_prob(action, out, log_std)
            entropy = (0.5 + _LOG_SQRT_2PI + log_std).sum(-1)
        return log_prob, entropy, value


def _categorical(logits: torch.Tensor, random: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """An action of the categorical of ``logits`` (sampled, or its mode) and its log-probability."""
    log_probs = torch.log_softmax(logits, -1)
    if random:  # Gumbel-max: argmax(log p - log E), E ~ Exp(1); cheaper than torch.multinomial on small batches
        noise = torch.empty_like(log_probs).exponential_().log_()
        action = (log_probs - noise).argmax(-1, keepdim=True)
    else:
        action = logits.argmax(-1, keepdim=True)
    return action.squeeze(-1), log_probs.gather(-1, action).squeeze(-1)


def _categorical_evaluate(logits: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The log-probability of ``action`` under the categorical of ``logits``, and its entropy."""
    log_probs = torch.log_softmax(logits, -1)
    return log_probs.gather(-1, action.long().unsqueeze(-1)).squeeze(-1), -(log_probs.exp() * log_probs).sum(-1)


def _bernoulli_log_prob(logits: torch.Tensor, ones: torch.Tensor) -> torch.Tensor:
    """The log-probability of each 0/1 entry of ``ones`` under independent Bernoullis of ``logits``."""
    return torch.where(ones.bool(), F.logsigmoid(logits), F.logsigmoid(-logits))


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """Log-density of a diagonal Gaussian, summed over the last dimension."""
    return (-0.5 * ((x - mean) / log_std.exp()).pow(2) - log_std - _LOG_SQRT_2PI).sum(-1)


def make_actor_critic(
    observation_space: Any,
    action_space: Any,
    *,
    encoder: str = "auto",
    cnn_channels: Sequence[int] | None = None,
    cnn_kernels: Sequence[int] | None = None,
    cnn_strides: Sequence[int] | None = None,
    cnn_features: int | None = None,
    network: Any = None,
    share_encoder: bool = True,
    recurrent: Mapping[str, int] | None = None,
    **options: Any,
) -> ActorCritic:
    """Build an :class:`ActorCritic` for Gymnasium spaces.

    :param observation_space: a ``Box`` observation space (flattened for the MLPs), or a ``Dict`` of them (rl-plugin-nets'
        ``MultiInputEncoder``: a CNN per image entry, the others flattened).
    :param action_space: a ``Discrete``, ``MultiDiscrete``, ``MultiBinary`` or one-dimensional ``Box`` action space.
    :param encoder: ``auto`` (a CNN for image spaces, see ``rl_plugin_nets.encoder_for``), ``mlp`` or ``cnn``.
    :param cnn_channels: output channels of each convolution (default: Nature's, or MinAtar's for small images).
    :param cnn_kernels: kernel size of each convolution.
    :param cnn_strides: stride of each convolution.
    :param cnn_features: width of the CNN's last layer.
    :param network: a user's encoder factory, or its import path ``package.module:factory`` (see ``rl_plugin_nets.image_encoder``).
    :param share_encoder: one encoder (the CNN, ``network``) for the actor and the critic, or one each.
    :param recurrent: ``{hidden_size, num_layers}`` of an LSTM before the heads (other keys are the loss's); ``None``: none.
    :param options: the remaining :class:`ActorCritic` parameters.
    :raises rlcore.ConfigError: for spaces this policy does not handle.
    """
    from gymnasium import spaces

    if not isinstance(observation_space, spaces.Box | spaces.Dict):
        raise ConfigError(f"algo.name: the pg algorithms need a Box or a Dict observation space, the env has {type(observation_space).__name__}")
    from rl_plugin_nets import image_encoder

    make_encoder = partial(
        image_encoder,
        observation_space,
        encoder,
        cnn_channels=cnn_channels,
        cnn_kernels=cnn_kernels,
        cnn_strides=cnn_strides,
        cnn_features=cnn_features,
        network=network,
        action_space=action_space,
    )
    cnn = make_encoder()
    if cnn is not None:
        options["encoder"] = cnn
        if not share_encoder:
            options["critic_encoder"] = make_encoder()  # (a second one, initialised apart)
    if recurrent is not None:
        options["lstm_hidden_size"] = recurrent.get("hidden_size", RECURRENT["hidden_size"])
        options["lstm_layers"] = recurrent.get("num_layers", RECURRENT["num_layers"])
    obs_shape = observation_space.shape or ()  # (a Dict's observations go through its encoder alone)
    if isinstance(action_space, spaces.Discrete):
        return ActorCritic(obs_shape, int(action_space.n), kind="categorical", **options)
    if isinstance(action_space, spaces.MultiDiscrete) and len(action_space.shape) == 1 and not np.any(action_space.start):
        return ActorCritic(obs_shape, len(action_space.nvec), kind="multi_categorical", nvec=action_space.nvec.tolist(), **options)
    if isinstance(action_space, spaces.MultiBinary) and len(action_space.shape) == 1:
        return ActorCritic(obs_shape, int(action_space.shape[0]), kind="bernoulli", **options)
    if isinstance(action_space, spaces.Box) and len(action_space.shape) == 1:
        if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
            options["action_bounds"] = "clip"  # unbounded: clipping to +-inf leaves actions unchanged
        return ActorCritic(obs_shape, int(action_space.shape[0]), kind="gaussian", low=action_space.low, high=action_space.high, **options)
    raise ConfigError(
        "algo.name: the pg algorithms need a Discrete, a one-dimensional MultiDiscrete (starting at 0) or MultiBinary, "
        f"or a one-dimensional Box action space; the env has {action_space}"
    )
