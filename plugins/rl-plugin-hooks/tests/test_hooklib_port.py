"""A TorchRL training script with SelectKeys, BatchSubSampler, LogScalar and LogValidationReward ports by changing its imports.

The script is written as for TorchRL (its Trainer, its hooks, their arguments); it is given its parts (the
collector, the policy and its loss, the optimizer, the logger, the evaluation env), which the test builds
with rl-core.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import torch
from hooklib_helpers import ActorCriticLoss

import rlcore
from rlcore_testing import MemoryLogger

TORCHRL_SCRIPT = """\
from torchrl.envs.utils import ExplorationType
from torchrl.trainers import BatchSubSampler, LogScalar, LogValidationReward, SelectKeys, Trainer

trainer = Trainer(
    collector=collector,
    total_frames=256,
    frame_skip=1,
    optim_steps_per_batch=4,
    loss_module=loss_module,
    optimizer=optimizer,
    logger=logger,
    clip_grad_norm=True,
    clip_norm=1.0,
    progress_bar=False,
    seed=0,
    log_interval=1,
)
SelectKeys(["observation", "action", ("next", "reward"), ("next", "done")]).register(trainer)
BatchSubSampler(batch_size=32, sub_traj_len=8, min_sub_traj_len=2).register(trainer)
LogScalar(logname="r_training", log_pbar=True, reward_key=("next", "reward")).register(trainer)
recorder = LogValidationReward(
    record_interval=2,
    record_frames=100,
    frame_skip=1,
    policy_exploration=policy,
    environment=eval_env,
    exploration_type=ExplorationType.DETERMINISTIC,
    log_keys=[("next", "reward")],
    out_keys={("next", "reward"): "r_evaluation"},
    log_pbar=True,
)
recorder.register(trainer)
trainer.train()
"""

#: the port: TorchRL's imports, and rl-core's
IMPORTS = {
    "from torchrl.envs.utils import ExplorationType": "from rl_plugin_hooks import ExplorationType",
    "from torchrl.trainers import BatchSubSampler, LogScalar, LogValidationReward, SelectKeys, Trainer": (
        "from rl_plugin_hooks import BatchSubSampler, LogScalar, LogValidationReward, SelectKeys\nfrom rlcore import Trainer"
    ),
}


def port(script: str) -> str:
    for torchrl, rlcore_import in IMPORTS.items():
        script = script.replace(torchrl, rlcore_import)
    return script


def test_the_torchrl_script_runs_with_its_imports_changed(tmp_path: Path) -> None:
    ported = port(TORCHRL_SCRIPT)
    changed = [line for line in difflib.ndiff(TORCHRL_SCRIPT.splitlines(), ported.splitlines()) if line[:1] in "+-"]
    assert changed and all(line[2:].startswith(("from torchrl.", "from rl_plugin_hooks ", "from rlcore ")) for line in changed)

    loss_module = ActorCriticLoss()
    logger = MemoryLogger(log_dir=tmp_path)
    eval_env = rlcore.make_vector_env("CartPole-v1", 1)
    parts = {
        "collector": rlcore.Collector(rlcore.make_vector_env("CartPole-v1", 2), loss_module.policy, frames_per_batch=64),
        "loss_module": loss_module,
        "policy": loss_module.policy,
        "optimizer": torch.optim.Adam(loss_module.parameters(), lr=1e-3),
        "logger": logger,
        "eval_env": eval_env,
    }
    namespace = dict(parts)
    exec(compile(ported, "torchrl_script.py", "exec"), namespace)
    trainer, recorder = namespace["trainer"], namespace["recorder"]
    eval_env.close()

    assert trainer.collected_frames == 256 and trainer.optim_steps == 16
    assert logger.steps("r_training") == [64, 128, 192, 256] and {v for _, v in logger.values["r_training"]} == {1.0}
    assert logger.steps("r_evaluation") == [64, 192]  # the 1st and the 3rd batch
    assert recorder.state_dict() == {"_count": 4}
    assert {"select_keys", "batch_subsampler", "log_reward", "recorder"} <= set(trainer.state_dict()["modules"])  # TorchRL's names
    assert logger.steps("loss/actor") == [64, 128, 192, 256]  # the trainer's own optimizer step, on the sub-batches
