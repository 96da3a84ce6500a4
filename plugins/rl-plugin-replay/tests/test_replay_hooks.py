"""The hooks at their points of a real short run (``register(trainer)``, TorchRL's way), and their checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModuleBase
from torch import nn

import rlcore
from rl_plugin_replay import (
    INDEX_KEY,
    PRIORITY_KEY,
    WEIGHT_KEY,
    EGreedy,
    HardUpdate,
    ReplayBufferTrainer,
    make_replay_buffer,
    make_target,
)
from rlcore_testing import MemoryLogger

FRAMES_PER_BATCH, STEPS, BATCH, INIT = 32, 4, 16, 64


class Greedy(TensorDictModuleBase):
    in_keys = ["observation"]
    out_keys = ["action"]

    def __init__(self, q: nn.Module) -> None:
        super().__init__()
        self.q = q

    def forward(self, td):
        td.set("action", self.q(td.get("observation")).argmax(-1))
        return td


class TinyQ(nn.Module):
    """A linear Q-function's TD loss, writing priorities: an rlcore.OffPolicyLoss, with no discount nor n-step of its own."""

    gamma: float | None = None
    n_step: int | None = None

    def __init__(self, env) -> None:
        super().__init__()
        self.q = nn.Linear(4, 2)
        self.target_q = make_target(self.q)
        self.policy = EGreedy(Greedy(self.q), env.single_action_space, annealing_frames=100)
        self.init_random_frames = INIT  # read by the replay hook

    def target_networks(self):
        return [(self.q, self.target_q)]

    def forward(self, batch):
        q = self.q(batch["observation"]).gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            target = batch["next", "reward"].squeeze(-1) + 0.9 * self.target_q(batch["next", "observation"]).max(-1).values
        batch.set(PRIORITY_KEY, (target - q).detach().abs())
        return TensorDict({"loss_td": (batch[WEIGHT_KEY] * (target - q) ** 2).mean()}, batch_size=[])


class Checks:
    """Records, after the replay and target hooks ran (``trylast``), what each hook point saw."""

    def __init__(self, hook: ReplayBufferTrainer, loss: TinyQ) -> None:
        self.hook, self.loss = hook, loss
        self.sizes: list[tuple[int, int]] = []
        self.steps_per_batch: list[tuple[int, int]] = []
        self.samples = 0
        self.priorities_ok: list[bool] = []
        self.target_synced: list[tuple[int, bool]] = []
        self._steps_before = 0
        self._sample = None

    @rlcore.hookimpl(trylast=True)
    def rl_pre_steps_log(self, trainer) -> None:
        self.sizes.append((trainer.collected_frames, len(self.hook.replay_buffer)))  # extended at batch_process
        self._steps_before = trainer.optim_steps

    @rlcore.hookimpl(trylast=True)
    def rl_post_loss(self, trainer, batch) -> None:
        assert batch.batch_size == (BATCH,) and INDEX_KEY in batch.keys() and WEIGHT_KEY in batch.keys()
        storage = self.hook.replay_buffer.storage
        assert torch.equal(batch["observation"], storage.column("observation")[batch[INDEX_KEY]])  # a sample of the buffer
        self.samples += 1
        self._sample = batch

    @rlcore.hookimpl(trylast=True)
    def rl_post_optim(self, trainer) -> None:
        sampler = self.hook.replay_buffer.sampler
        index, error = self._sample[INDEX_KEY], self._sample[PRIORITY_KEY]
        last = {i: e for i, e in zip(index.tolist(), error.tolist(), strict=True)}  # duplicates: the last one counts
        expected = torch.tensor([(abs(e) + sampler.eps) ** sampler.alpha for e in last.values()], dtype=torch.float64)
        self.priorities_ok.append(torch.allclose(sampler.tree.leaves[list(last)], expected))  # updated at post_loss
        online, target = self.loss.q.state_dict(), self.loss.target_q.state_dict()
        synced = all(torch.equal(online[k], target[k]) for k in online)
        self.target_synced.append((trainer.optim_steps, synced))

    @rlcore.hookimpl
    def rl_post_steps(self, trainer) -> None:
        self.steps_per_batch.append((trainer.collected_frames, trainer.optim_steps - self._steps_before))


def trainer_of(loss, run_dir, total_frames=256, env=None, optimizer=None, **kwargs):
    """A hand-built trainer of ``loss`` on CartPole (``env``: 2 envs of it), with no hook: what a TorchRL script starts from."""
    return rlcore.Trainer(
        collector=rlcore.Collector(env or rlcore.make_vector_env("CartPole-v1", 2), loss.policy, FRAMES_PER_BATCH),
        loss_module=loss,
        optimizer=optimizer or torch.optim.Adam(loss.parameters(), lr=1e-3, fused=True),
        total_frames=total_frames,
        optim_steps_per_batch=STEPS,
        seed=0,
        progress_bar=False,
        plugin_manager=rlcore.PluginManager(discover=False),
        run_dir=run_dir,
        **kwargs,
    )


def make_trainer(tmp_path, frames: int = 256, frame_skip: int = 1, beta: float = 0.4, **hook_options):
    env = rlcore.make_vector_env("CartPole-v1", 2)
    torch.manual_seed(0)
    loss = TinyQ(env)
    trainer = trainer_of(loss, tmp_path, frames, env, torch.optim.Adam(loss.parameters(), lr=1e-2), frame_skip=frame_skip)
    options = {"flatten_tensordicts": True, **hook_options}
    hook = ReplayBufferTrainer(make_replay_buffer(200, sampler="prioritized", beta=beta), batch_size=BATCH, **options)
    hook.register(trainer)
    HardUpdate(interval=3).register(trainer)
    return trainer, hook, loss


def test_hooks_act_at_their_points_of_a_real_run(tmp_path):
    trainer, hook, loss = make_trainer(tmp_path)
    checks = Checks(hook, loss)
    trainer.register_plugin(checks, "checks")
    trainer.train()
    assert checks.sizes == [(f, min(f, 200)) for f in range(32, 257, 32)]
    # no optimisation before init_random_frames (64) frames, then optim_steps_per_batch per batch
    assert checks.steps_per_batch == [(f, 0 if f < INIT else STEPS) for f in range(32, 257, 32)]
    assert checks.samples == trainer.optim_steps == STEPS * 7
    assert all(checks.priorities_ok)
    assert [synced for steps, synced in checks.target_synced] == [steps % 3 == 0 for steps, _ in checks.target_synced]
    assert loss.policy.frames == 256


def test_the_buffer_stores_batches_as_the_other_batch_process_hooks_leave_them(tmp_path):
    trainer, hook, _ = make_trainer(tmp_path, frames=64)

    class Halve(rlcore.TrainerHookBase):  # registered after the buffer's hook, as a config's own hooks are
        def register(self, trainer, name="halve"):
            trainer.register_op("batch_process", lambda batch: batch.set(("next", "reward"), batch["next", "reward"] / 2))

        def state_dict(self):
            return {}

        def load_state_dict(self, state):
            pass

    Halve().register(trainer)
    trainer.train()
    rewards = hook.replay_buffer.storage.column(("next", "reward"))[: len(hook.replay_buffer)]
    assert len(rewards) == 64 and torch.all(rewards == 0.5)  # CartPole's 1 per step, halved before it was stored


def test_the_buffer_is_part_of_the_checkpoint(tmp_path, capsys):
    trainer, hook, _ = make_trainer(tmp_path / "a", frames=128)
    trainer.train()
    state = trainer.state_dict()["modules"]
    assert state["replay_buffer"]["replay_buffer"]["storage"]["size"] == 128
    fresh, fresh_hook, _ = make_trainer(tmp_path / "b", frames=128)
    fresh.load_state_dict(trainer.state_dict())
    assert len(fresh_hook.replay_buffer) == 128
    assert torch.equal(fresh_hook.replay_buffer.sampler.tree.leaves, hook.replay_buffer.sampler.tree.leaves)
    hook.checkpoint = False  # a very large buffer may be left out ...
    omitted = trainer.state_dict()
    again, again_hook, _ = make_trainer(tmp_path / "c", frames=128)
    again.load_state_dict(omitted)
    assert len(again_hook.replay_buffer) == 0
    err = capsys.readouterr().err.strip().splitlines()  # ... and resuming says so in one line
    assert len(err) == 1 and "empty buffer" in err[0]
    again.total_frames = 128 + 96
    steps = again.optim_steps
    again.train()  # no learning until init_random_frames (64) transitions are stored again
    assert again.optim_steps - steps == 2 * STEPS  # batches of 32: none at 32 stored, then at 64 and 96


def test_an_empty_buffer_follows_the_trainer_device(tmp_path, make_transitions):
    trainer, hook, _ = make_trainer(tmp_path)
    assert hook.device == trainer.device and hook.replay_buffer.storage.device == trainer.device
    hook.replay_buffer.extend(make_transitions(2, obs_dim=4))
    with pytest.raises(RuntimeError, match="before writing"):
        hook.replay_buffer.to("cpu")


def test_beta_anneals_from_its_start_across_a_resume(tmp_path):
    whole, whole_hook, _ = make_trainer(tmp_path / "a", frames=256, beta_end=1.0)
    whole.max_batches = 5
    whole.train()
    first, _, _ = make_trainer(tmp_path / "b", frames=256, beta_end=1.0)
    first.max_batches = 4  # stopped at 128 frames, beta 0.7
    first.train()
    resumed, resumed_hook, _ = make_trainer(tmp_path / "c", frames=256, beta_end=1.0)
    resumed.load_state_dict(first.state_dict())
    resumed.max_batches = 5
    resumed.train()
    # from 0.4 at the start of the run, not from the 0.7 the checkpoint holds
    assert resumed_hook.replay_buffer.sampler.beta == whole_hook.replay_buffer.sampler.beta == pytest.approx(0.4 + 0.6 * 160 / 256)


def test_n_step_trajectories_that_would_change_shape_are_refused(tmp_path):
    with pytest.raises(rlcore.ConfigError, match="flatten_tensordicts: n_step=3"):
        make_trainer(tmp_path, flatten_tensordicts=False, n_step=3, gamma=0.9)


def test_an_n_step_or_gamma_other_than_the_algorithms_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(TinyQ, "gamma", 0.9, raising=False)  # the algorithm's discount and n-step
    monkeypatch.setattr(TinyQ, "n_step", 3, raising=False)
    with pytest.raises(rlcore.ConfigError, match=r"^hooks.replay_buffer.gamma: 0.5 differs from the algorithm's gamma \(0.9\)"):
        make_trainer(tmp_path, gamma=0.5)
    with pytest.raises(rlcore.ConfigError, match=r"^hooks.replay_buffer.n_step: 5 differs from the algorithm's n_step \(3\)"):
        make_trainer(tmp_path / "n", n_step=5)
    _, hook, _ = make_trainer(tmp_path / "same", n_step=3, gamma=0.9)  # the same values: taken
    assert (hook.n_step, hook.gamma) == (3, 0.9) and hook.nstep is not None


def test_exploration_counts_the_trainers_frames(tmp_path):
    trainer, _, loss = make_trainer(tmp_path, frames=256, frame_skip=2)  # a collected step stands for 2 frames
    seen = []

    class Clock:
        @rlcore.hookimpl(trylast=True)
        def rl_pre_steps_log(self, trainer) -> None:
            seen.append((trainer.collected_frames, loss.policy.frames, loss.policy.epsilon))

    trainer.register_plugin(Clock(), "clock")
    trainer.train()
    # the warm-up and the annealing (over 100 frames) count what total_frames counts, not the policy's own steps
    assert seen == [(f, f, loss.policy.schedule(f)) for f in range(64, 257, 64)]
    assert loss.policy.frames_per_step == 2
    assert seen[0][2] == pytest.approx(1.0 - 0.95 * 64 / 100)  # eps_init 1, eps_end 0.05


def readme_loss_class():
    """``MyQLoss``, the README's example of an off-policy loss on this API, as the README writes it."""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    code = readme.split("## An off-policy loss on this API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    return namespace["MyQLoss"]


def test_the_readme_loss_trains_with_the_hooks_and_refuses_to_run_without_them(tmp_path):
    env = rlcore.make_vector_env("CartPole-v1", 2)
    loss = readme_loss_class()(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)), env.single_action_space, init_random_frames=64)

    def replay(trainer):
        ReplayBufferTrainer(make_replay_buffer(200, sampler="prioritized"), batch_size=BATCH, flatten_tensordicts=True).register(trainer)

    with pytest.raises(rlcore.ConfigError, match="^hooks.replay_buffer: this algorithm learns from the samples of a replay buffer"):
        trainer_of(loss, tmp_path / "bare").train()
    trainer = trainer_of(loss, tmp_path / "no-targets")
    replay(trainer)
    with pytest.raises(rlcore.ConfigError, match="^hooks.target_updater: this algorithm has target networks"):
        trainer.train()
    logged = MemoryLogger()
    trainer = trainer_of(loss, tmp_path / "run", loggers=[logged], log_interval=1)
    replay(trainer)
    HardUpdate(interval=5).register(trainer)
    trainer.train()
    assert trainer.optim_steps == STEPS * 7  # in the batches from 64 frames on
    assert torch.equal(loss.qnet[0].weight, loss.target_qnet[0].weight) == (trainer.optim_steps % 5 == 0)
    assert logged.steps("train/epsilon") == list(range(32, 257, 32))  # the replay hook logs the explorer's stats()
    assert logged.last("train/epsilon") == pytest.approx(loss.policy.epsilon) and loss.policy.epsilon < 1


def test_the_seeds_hand_registered_buffer_and_updater_ops_count(tmp_path):
    """TorchRL's own pattern: the buffer's extend, sample and update_priority and the updater's step given to
    register_op by hand, no register(); the off-policy loss trains on them instead of refusing the run."""
    env = rlcore.make_vector_env("CartPole-v1", 2)
    loss = readme_loss_class()(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)), env.single_action_space, init_random_frames=0)
    trainer = trainer_of(loss, tmp_path, total_frames=128)
    buffer = ReplayBufferTrainer(make_replay_buffer(200, sampler="prioritized"), batch_size=BATCH, flatten_tensordicts=True)
    updater = HardUpdate(loss, interval=2)
    trainer.register_op("batch_process", buffer.extend)
    trainer.register_op("process_optim_batch", buffer.sample)
    trainer.register_op("post_loss", buffer.update_priority)
    trainer.register_op("post_optim", updater.step)
    assert trainer.ops["process_optim_batch"] == [buffer.sample] and trainer.ops["post_optim"] == [updater.step]
    trainer.train()
    assert len(buffer.replay_buffer) == 128 and trainer.optim_steps == STEPS * 4
    assert updater.steps == trainer.optim_steps and torch.equal(loss.qnet[0].weight, loss.target_qnet[0].weight) == (updater.steps % 2 == 0)


def test_frames_rendered_for_videos_stay_out_of_the_buffer(make_transitions):
    from rl_plugin_replay import replay_buffer

    hook = replay_buffer(capacity=64, batch_size=4)  # as the config makes it: exclude_keys=("pixels",)
    batch = make_transitions(8, envs=2)
    batch.set("pixels", torch.zeros(2, 8, 16, 16, 3, dtype=torch.uint8))
    hook.extend(batch)
    keys = {key if isinstance(key, str) else ".".join(key) for key in hook.replay_buffer.storage.keys}
    assert "observation" in keys and not any("pixels" in key for key in keys)
    assert len(hook.replay_buffer) == 16 and "pixels" in batch.keys()  # the batch itself keeps them, for the recorder


def test_a_constant_beta_is_the_config_s_after_a_resume(tmp_path):
    trainer, hook, _ = make_trainer(tmp_path / "a", frames=96)
    trainer.train()
    fresh, fresh_hook, _ = make_trainer(tmp_path / "b", frames=96, beta=0.9)  # the resumed run's config says 0.9
    fresh.load_state_dict(trainer.state_dict())
    assert hook.replay_buffer.sampler.beta == 0.4 and fresh_hook.replay_buffer.sampler.beta == 0.9
    assert torch.equal(fresh_hook.replay_buffer.sampler.tree.leaves, hook.replay_buffer.sampler.tree.leaves)  # the rest is the run's


def test_a_batch_without_a_key_a_transition_needs_is_refused_in_one_line(tmp_path):
    pytest.importorskip("rl_plugin_hooks")
    pytest.importorskip("rl_plugin_dqn")
    config = rlcore.load_config(
        overrides=[
            "algo.name=dqn", "env.num_envs=2", "collector.frames_per_batch=32", "trainer.total_frames=64", "trainer.progress_bar=false",
            "loggers.console=null", "hooks.select_keys={keys: [observation, action, next.reward, next.observation, next.terminated]}",
        ]
    )  # fmt: skip
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    message = r"^hooks.replay_buffer: the batch has no key 'next.done', which every off-policy loss reads \(the batch has: action, "
    with pytest.raises(rlcore.ConfigError, match=message):
        trainer.train()
