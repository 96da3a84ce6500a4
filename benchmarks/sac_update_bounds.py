"""How fast can a SAC update be on this machine? rl-core's update against Stable-Baselines3's and two bounds.

On the pinned settings of ``offpolicy_speed_vs_sb3.py`` (Pendulum-v1, samples of 256, [256, 256] ReLU actor and
twin critics, Adam, the soft target update, one torch thread), one process times updates in blocks, the variants
in turn, block after block:

- ``rl-core``: what the trainer runs for one optimisation step: a replay sample, the SAC loss module's forward, the
  backward of its losses, the optimizer step, the soft target update;
- ``hand-derived``: the same step with every gradient written out instead of autograd (the forward and backward of
  each critic in one go, the actor's two forwards as one, the actor loss's gradient through the smaller critic of
  each item only); checked against autograd's gradients first;
- ``products only``: the 15 matrix products ``[256, 256] x [256, 256]`` of the hand-derived step (the 8 of the
  forward passes, 7 of the backward) and nothing else, on as many distinct tensors as an update keeps alive: the
  least time any SAC update with these networks takes here, whatever the framework;
- ``Stable-Baselines3``: ``SAC.train(gradient_steps=1)`` on a buffer filled by a short run (denormals not flushed,
  its default; rl-core's off-policy losses flush them while they train, and so does every rl-core variant here).

It prints the median ms per update of each and SB3's update time over each: the update-only ratio. A whole frame
adds the loop around the update (the env step, acting, the buffer, the hooks): ``offpolicy_speed_vs_sb3.py
--breakdown`` measures that part.

    python benchmarks/sac_update_bounds.py                 # 12 blocks of 25 updates of each variant, ~1 minute
    python benchmarks/sac_update_bounds.py --blocks 6 --updates 10
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from offpolicy_speed_vs_sb3 import SAC, rlcore_config, sb3_model
from pg_speed_vs_sb3 import describe_machine

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_2 = math.log(2.0)
_relu_backward_ = torch.ops.aten.threshold_backward.grad_input  # grad where the layer's output > 0, else 0; in place


def rlcore_trainer(frames: int) -> Any:
    """rl-core's SAC with the pinned settings, trained for ``frames`` frames (a filled buffer, warm networks)."""
    import rlcore

    trainer = rlcore.build_trainer(rlcore_config("sac", 0, frames), run_dir=tempfile.mkdtemp())
    trainer.train()
    return trainer


def rlcore_step(trainer: Any) -> Callable[[], None]:
    """One optimisation step as the trainer runs it (without its hook dispatch and logging)."""
    loss, optimizer = trainer.loss_module, trainer.optimizer
    params = [p for group in optimizer.param_groups for p in group["params"]]

    def step() -> None:
        losses = loss(loss.replay_hook.sample(None))
        for param in params:
            param.grad = None
        (losses["loss_qvalue"] + losses["loss_actor"] + losses["loss_alpha"]).backward()
        optimizer.step()
        loss.target_hook.step()

    return step


# ---------------------------------------------------------------------------- the hand-derived step


def _forward(x: torch.Tensor, weights: list[torch.Tensor], biases: list[torch.Tensor]) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """An MLP's output and each layer's input (ReLU between the layers)."""
    inputs, h = [x], x
    for i, (w, b) in enumerate(zip(weights, biases)):
        h = torch.addmm(b, h, w)
        if i < len(weights) - 1:
            h.relu_()
            inputs.append(h)
    return h, inputs


def _backward(g: torch.Tensor, inputs: list[torch.Tensor], weights: list[torch.Tensor], need_weights: bool = True) -> tuple[list[Any], list[Any], torch.Tensor]:
    """Back through an MLP from the gradient ``g`` of its output: the weights' and biases' gradients, and the input's."""
    dw: list[Any] = [None] * len(weights)
    db: list[Any] = [None] * len(weights)
    for i in reversed(range(len(weights))):
        if need_weights:
            dw[i], db[i] = torch.mm(inputs[i].t(), g), g.sum(0)
        g = torch.mm(g, weights[i].t())
        if i > 0:
            _relu_backward_(g, inputs[i], 0, grad_input=g)
    return dw, db, g


def hand_step(trainer: Any, optimize: bool = True) -> Callable[..., dict[str, Any]]:
    """The SAC step of :func:`rlcore_step`, every gradient derived by hand; the step returns the losses.

    The step takes a replay sample, or draws one; with ``optimize=False`` it leaves the gradients in ``.grad``
    and steps neither the optimizer nor the targets.

    The math is ``rl_plugin_sac._loss``'s (its docstring); the gradients, with ``B`` items:
    ``d loss_qvalue / d Q_i(s, a) = (Q_i - y) / B``; ``d loss_actor / d a~ = -(1/B) dQ_j(s, a~)/da~`` with ``j`` the
    critic whose value is the smaller for that item; through ``a~ = tanh(u)``, ``u = mean + std * noise``:
    ``d/du = d/da~ (1 - a~^2) + (alpha/B) 2 a~`` (``-log(1 - tanh(u)^2)``'s derivative is ``2 tanh(u)``),
    ``d/dlog_std = d/du std noise - alpha/B`` inside the clamp, 0 outside; ``d loss_alpha / d log_alpha = -mean(log pi + H)``.
    """
    loss, optimizer = trainer.loss_module, trainer.optimizer
    actor, critic, target = loss.actor, loss.critic, loss.target_critic
    if critic.encoder is not None or critic.activation is not torch.relu_ or not loss.log_alpha.requires_grad:
        raise SystemExit("the hand-derived step covers the pinned settings only: vector observations, ReLU, a learned temperature")
    layers = critic.layers
    a_w = [getattr(actor, w) for w, _ in actor.layers]
    a_b = [getattr(actor, b) for _, b in actor.layers]
    c_w = [[getattr(critic, w)[k] for w, _ in layers] for k in range(2)]
    c_b = [[getattr(critic, b)[k] for _, b in layers] for k in range(2)]
    t_w = [[target._buffers[w][k] for w, _ in layers] for k in range(2)]
    t_b = [[target._buffers[b][k] for _, b in layers] for k in range(2)]
    low, high = actor.log_std_min, actor.log_std_max

    @torch.no_grad()
    def step(sample: Any = None) -> dict[str, Any]:
        sample = loss.replay_hook.sample(None) if sample is None else sample
        obs, next_obs = sample.get("observation"), sample.get(("next", "observation"))
        n, obs_dim = obs.shape
        action = loss.bounds.to_unit(sample.get("action"))
        alpha = loss.log_alpha.exp()
        # the actor at s' and at s, in one pass
        out, actor_inputs = _forward(torch.cat([next_obs, obs]), a_w, a_b)
        mean, raw_log_std = out.chunk(2, dim=-1)
        log_std = raw_log_std.clamp(low, high)
        std = log_std.exp()
        noise = torch.cat([torch.randn_like(mean[:n]), torch.randn_like(mean[n:])])  # the loss module's order: s', then s
        u = mean + std * noise
        log_pi = (-0.5 * noise.pow(2) - log_std - _LOG_SQRT_2PI - 2 * (_LOG_2 - u - F.softplus(-2 * u))).sum(-1, keepdim=True)
        pi = torch.tanh(u)
        # the target
        x_next = torch.cat([next_obs, pi[:n]], dim=-1)
        next_q = torch.minimum(_forward(x_next, t_w[0], t_b[0])[0], _forward(x_next, t_w[1], t_b[1])[0])
        bootstrap = torch.where(sample.get(("next", "terminated")), 0.0, loss.gamma)
        y = torch.addcmul(sample.get(("next", "reward")), bootstrap, next_q - alpha * log_pi[:n])
        # each critic's forward and backward at (s, a) in one go
        x = torch.cat([obs, action], dim=-1)
        q, grads = [], []
        for k in range(2):
            q_k, inputs = _forward(x, c_w[k], c_b[k])
            dw, db, _ = _backward((q_k - y) / n, inputs, c_w[k])
            q.append(q_k)
            grads.append((dw, db))
        # the actor's loss through the smaller critic of each item
        pi_s, log_pi_s = pi[n:], log_pi[n:]
        x_pi = torch.cat([obs, pi_s], dim=-1)
        at_pi = [_forward(x_pi, c_w[k], c_b[k]) for k in range(2)]
        second = at_pi[1][0] < at_pi[0][0]
        d_pi = torch.empty_like(pi_s)
        for k in range(2):
            rows = (second.view(-1) == bool(k)).nonzero().view(-1)
            _, _, dx = _backward(
                torch.full((len(rows), 1), -1.0 / n, dtype=obs.dtype), [h.index_select(0, rows) for h in at_pi[k][1]], c_w[k], need_weights=False
            )
            d_pi.index_copy_(0, rows, dx[:, obs_dim:])
        d_log_pi = alpha / n
        d_u = d_pi * (1 - pi_s.pow(2)) + d_log_pi * 2 * pi_s
        d_log_std = torch.where((raw_log_std[n:] >= low) & (raw_log_std[n:] <= high), d_u * std[n:] * noise[n:] - d_log_pi, 0.0)
        dw, db, _ = _backward(torch.cat([d_u, d_log_std], dim=-1), [h[n:] for h in actor_inputs], a_w)
        # the gradients, where the optimizer reads them
        for i, (w, b) in enumerate(actor.layers):
            getattr(actor, w).grad, getattr(actor, b).grad = dw[i], db[i]
        for i, (w, b) in enumerate(layers):
            getattr(critic, w).grad = torch.stack([grads[0][0][i], grads[1][0][i]])
            getattr(critic, b).grad = torch.stack([grads[0][1][i], grads[1][1][i]]).unsqueeze(1)
        loss.log_alpha.grad = -(log_pi_s + loss.target_entropy).mean()
        if optimize:
            optimizer.step()
            loss.target_hook.step()
        q_min = torch.minimum(at_pi[0][0], at_pi[1][0])
        return {
            "loss_qvalue": 0.5 * sum(((q_k - y) ** 2).mean() for q_k in q),
            "loss_actor": (alpha * log_pi_s - q_min).mean(),
            "loss_alpha": -(loss.log_alpha * (log_pi_s + loss.target_entropy)).mean(),
        }

    return step


def check_hand_step(trainer: Any) -> float:
    """How far the hand-derived gradients and losses are from autograd's on one sample, both in float64: the largest
    ``|hand - autograd| / |autograd|`` (Euclidean norms) of the three losses and of each network's whole gradient.

    :raises SystemExit: when one differs by more than 1e-9 (a wrong formula differs by far more; float32 rounding
        alone would leave about 1e-5, where the critics' errors ``Q - y`` cancel most of their digits).
    """
    loss = trainer.loss_module.double()  # (parameters and buffers in place: float() gives them back exactly)
    params = dict(loss.named_parameters())
    sample = loss.replay_hook.sample(None).apply(lambda t: t.double() if t.is_floating_point() else t)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(1)
            hand = hand_step(trainer, optimize=False)(sample)
        hand_grads = {name: p.grad for name, p in params.items()}
        for p in params.values():
            p.grad = None
        with torch.random.fork_rng():
            torch.manual_seed(1)
            losses = loss(sample)
        (losses["loss_qvalue"] + losses["loss_actor"] + losses["loss_alpha"]).backward()
        pairs = [(hand[key], losses[key].detach()) for key in ("loss_qvalue", "loss_actor", "loss_alpha")]
        for network in {name.split(".")[0] for name in params}:  # actor, critic, log_alpha
            names = [name for name in params if name.split(".")[0] == network]
            pairs.append((torch.cat([hand_grads[n].flatten() for n in names]), torch.cat([params[n].grad.flatten() for n in names])))
    finally:
        for p in params.values():
            p.grad = None
        loss.float()
    worst = max(float((ours - theirs).norm() / theirs.norm().clamp_min(1e-300)) for ours, theirs in pairs)
    if worst > 1e-9:
        raise SystemExit(f"the hand-derived step differs from autograd's by {worst:.2e} (relative, float64): its math is wrong")
    return worst


def products_only(batch: int = SAC["batch_size"], width: int = 256) -> Callable[[], None]:
    """The hand-derived step's 15 products ``[batch, width] x [width, width]`` and nothing else, each on tensors of its own
    (an update keeps that many alive)."""
    weights = [torch.randn(width, width) / width**0.5 for _ in range(5)]  # actor, 2 critics, 2 targets
    inputs = [torch.randn(batch, width) for _ in range(12)]
    grads = [torch.randn(batch, width) for _ in range(8)]

    def step() -> None:
        torch.mm(torch.cat(inputs[0:2]), weights[0])  # the actor at s' and s (two products' worth)
        for i in (1, 2):
            torch.mm(inputs[2 + i], weights[2 + i])  # the target critics
            torch.mm(inputs[4 + i], weights[i])  # the critics at (s, a)
            torch.mm(inputs[6 + i].t(), grads[i])  # their weights' gradients
            torch.mm(grads[2 + i], weights[i].t())  # their inputs' gradients
            torch.mm(inputs[8 + i], weights[i])  # the critics at (s, a~)
        torch.mm(grads[5], weights[1].t())  # the actor loss back through the smaller critic of each item (B items in all)
        torch.mm(inputs[11].t(), grads[6])  # the actor's weights' gradient
        torch.mm(grads[7], weights[0].t())  # its inputs' gradient

    return step


def sb3_step(frames: int) -> Callable[[], None]:
    """SB3's SAC with the pinned settings, trained for ``frames`` frames; the step is one ``train(gradient_steps=1)``."""
    model = sb3_model("sac", seed=0)
    model.learn(total_timesteps=frames)
    return lambda: model.train(gradient_steps=1, batch_size=SAC["batch_size"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=12, help="blocks of updates of each variant, in turn")
    parser.add_argument("--updates", type=int, default=25, help="updates a block")
    parser.add_argument("--warmup-frames", type=int, default=600, help="frames each framework trains first (its buffer, warm networks)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    trainer = rlcore_trainer(args.warmup_frames)
    worst = check_hand_step(trainer)
    variants: dict[str, tuple[Callable[[], Any], bool]] = {  # name: (step, flush denormals)
        "rl-core": (rlcore_step(trainer), True),
        "hand-derived": (hand_step(trainer), True),
        "products only": (products_only(), True),
        "Stable-Baselines3": (sb3_step(args.warmup_frames), False),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for block in range(args.blocks + 1):  # the first block warms up
        for name, (step, flush) in variants.items():
            torch.set_flush_denormal(flush)
            tic = time.perf_counter()
            for _ in range(args.updates):
                step()
            if block:
                times[name].append((time.perf_counter() - tic) / args.updates * 1e3)
    torch.set_flush_denormal(False)
    sb3 = statistics.median(times["Stable-Baselines3"])
    print(f"\n### SAC updates on Pendulum-v1 (samples of {SAC['batch_size']}, [256, 256] ReLU, one thread)\n\n{describe_machine()}\n")
    print(f"The hand-derived gradients and losses equal autograd's within {worst:.1e} (relative, both in float64).\n")
    print(f"| variant | ms per update (median of {args.blocks} blocks of {args.updates}) | spread | SB3's update / this |")
    print("| --- | --- | --- | --- |")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.2f} | {min(values):.2f}-{max(values):.2f} | {sb3 / median:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
