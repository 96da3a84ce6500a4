"""A third party's off-policy loss, written against rl-plugin-replay's public API only.

``toyq`` is fitted Q-iteration with a linear Q-function: a prioritized replay buffer and a soft
target network from the config's ``hooks`` section, epsilon-greedy collection, a weighted
squared TD loss that writes its TD errors back as priorities.
"""

from __future__ import annotations

from typing import Any

from rlcore import Algorithm, hookimpl

DEFAULTS = {
    "env": {"id": "CartPole-v1", "num_envs": 2},
    "collector": {"frames_per_batch": 64},
    "algo": {"gamma": 0.9},
    "optim": {"lr": 1e-2},
    "trainer": {"optim_steps_per_batch": 4},
    "hooks": {
        "replay_buffer": {"capacity": 500, "batch_size": 32, "sampler": "prioritized", "init_random_frames": 128},
        "target_updater": {"kind": "soft", "tau": 0.1},
    },
}


def build(config: dict[str, Any], observation_space: Any, action_space: Any, device: Any = "cpu") -> Any:
    import torch
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModuleBase
    from torch import nn

    from rl_plugin_replay import PRIORITY_KEY, WEIGHT_KEY, EGreedy, make_target

    class Greedy(TensorDictModuleBase):
        in_keys = ["observation"]
        out_keys = ["action"]

        def __init__(self, q: nn.Module) -> None:
            super().__init__()
            self.q = q

        def forward(self, td: Any) -> Any:
            td.set("action", self.q(td.get("observation")).argmax(-1))
            return td

    class ToyQLoss(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(observation_space.shape[0], int(action_space.n))
            self.target_q = make_target(self.q)
            self.policy = EGreedy(Greedy(self.q), action_space, eps_init=1.0, eps_end=0.1, annealing_frames=256)
            self.gamma = config["gamma"]

        def target_networks(self) -> list[tuple[nn.Module, nn.Module]]:
            return [(self.q, self.target_q)]

        def forward(self, batch: Any) -> Any:
            q = self.q(batch["observation"]).gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1)
            with torch.no_grad():
                next_v = self.target_q(batch["next", "observation"]).max(-1).values
                target = batch["next", "reward"].squeeze(-1) + self.gamma * (~batch["next", "terminated"].squeeze(-1)) * next_v
            error = target - q
            batch.set(PRIORITY_KEY, error.detach().abs())
            return TensorDict({"loss_td": (batch[WEIGHT_KEY] * error.pow(2)).mean()}, batch_size=[])

    return ToyQLoss().to(device)


@hookimpl
def rl_register_algorithms() -> list[Algorithm]:
    return [Algorithm("toyq", build, DEFAULTS, "a third party's linear fitted Q-iteration")]
