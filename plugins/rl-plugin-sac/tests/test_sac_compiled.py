"""SAC's compiled update (rl-plugin-replay's ``CompiledUpdate``) against the eager one: the same losses and gradients."""

from __future__ import annotations

import gymnasium
import pytest
import torch
from tensordict import TensorDict

import rl_plugin_sac
from rl_plugin_replay import PRIORITY_KEY, CompiledUpdate

pytestmark = pytest.mark.slow  # each compiles a program: 10 to 40 s

OBS = gymnasium.spaces.Box(-10, 10, (3,))
ACTIONS = gymnasium.spaces.Box(-2.0, 2.0, (2,))
#: the compiled program draws its actions' noise from torch's generator as eager code does (not from inductor's own)
SAME_DRAWS = {"fallback_random": True}


def replay_sample(seed: int, n: int = 32) -> TensorDict:
    """A prioritized sample: transitions and their importance weights."""
    g = torch.Generator().manual_seed(seed)
    data = {
        "observation": torch.randn(n, 3, generator=g),
        "action": torch.rand(n, 2, generator=g) * 4 - 2,
        "next": {"observation": torch.randn(n, 3, generator=g), "reward": torch.randn(n, 1, generator=g), "terminated": torch.rand(n, 1, generator=g) < 0.1},
        "_weight": torch.rand(n, generator=g) + 0.5,
    }
    return TensorDict(data, batch_size=[n])


def test_compiled_losses_gradients_and_priorities_match_eager():
    # a prioritized sample: the critics' errors weighted, the priorities written back (the uniform sample's path and more)
    torch.manual_seed(0)
    loss = rl_plugin_sac.build_sac({"hidden_sizes": [32, 32]}, OBS, ACTIONS)
    params = [p for p in loss.parameters() if p.requires_grad]
    compiled = CompiledUpdate(loss, options=SAME_DRAWS)
    for seed in range(3):
        a, b = replay_sample(seed), replay_sample(seed)
        torch.manual_seed(100 + seed)
        out = loss(a)
        grads = torch.autograd.grad(out["loss_qvalue"] + out["loss_actor"] + out["loss_alpha"], params)
        torch.manual_seed(100 + seed)  # the same draws of the actions
        got = compiled.losses(b)
        assert got is not None and compiled.compiled
        for key in out.keys():
            torch.testing.assert_close(got[key], out[key].detach(), rtol=1e-6, atol=1e-6)
        for g_compiled, g_eager in zip(compiled.grads, grads, strict=True):
            torch.testing.assert_close(g_compiled, g_eager, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(b[PRIORITY_KEY], a[PRIORITY_KEY], rtol=1e-6, atol=1e-6)
