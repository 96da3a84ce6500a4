"""The collector's batches: keys, shapes, termination kept apart from truncation, true final observations."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from tensordict.nn import TensorDictModule

import rlcore
from rlcore._app.envs import env_states, load_env_states, make_vector_env


def constant_policy(action: int = 0) -> TensorDictModule:
    return TensorDictModule(lambda obs: torch.full(obs.shape[:1], action, dtype=torch.int64), ["observation"], ["action"])


def test_batch_keys_and_shapes():
    env = make_vector_env("CartPole-v1", 3)
    batch = rlcore.Collector(env, constant_policy(), frames_per_batch=30).collect()
    assert batch.batch_size == torch.Size([3, 10])
    assert batch["observation"].shape == (3, 10, 4) and batch["observation"].dtype == torch.float32
    assert batch["action"].shape == (3, 10)
    for key in ("reward", "done", "terminated", "truncated"):
        assert batch["next", key].shape == (3, 10, 1)
    assert torch.equal(batch["next", "done"], batch["next", "terminated"] | batch["next", "truncated"])
    # within an episode, the next observation is the following step's observation
    not_done = ~batch["next", "done"][:, :-1, 0]
    assert torch.equal(batch["next", "observation"][:, :-1][not_done], batch["observation"][:, 1:][not_done])


def test_truncation_keeps_the_true_final_observation():
    env = make_vector_env("CartPole-v1", 2, kwargs={"max_episode_steps": 4})
    collector = rlcore.Collector(env, constant_policy(0), frames_per_batch=2 * 12)
    collector.set_seed(3)
    batch = collector.collect()
    truncated = batch["next", "truncated"][0, :, 0]
    assert truncated.tolist() == [False, False, False, True] * 3
    assert not batch["next", "terminated"].any()
    t = 3  # last step of the first episode: next obs is the final one, not the reset one
    final = batch["next", "observation"][0, t]
    reset = batch["observation"][0, t + 1]
    assert not torch.allclose(final, reset)
    # the final observation continues the dynamics: cart velocity keeps decreasing under action 0
    assert final[1] < batch["next", "observation"][0, t - 1][1]
    returns, lengths = collector.finished_episodes
    assert lengths.tolist() == [4] * 6 and returns.tolist() == [4.0] * 6


def test_termination_and_episode_statistics():
    env = make_vector_env("CartPole-v1", 4)
    collector = rlcore.Collector(env, constant_policy(1), frames_per_batch=4 * 50)
    collector.set_seed(0)
    batch = collector.collect()
    assert batch["next", "terminated"].any() and not batch["next", "truncated"].any()
    returns, lengths = collector.finished_episodes
    assert len(returns) == int(batch["next", "done"].sum())
    assert np.array_equal(returns, lengths.astype(float))  # CartPole pays 1 per step


def test_episodes_spanning_batches_are_counted_whole_in_the_order_they_end():
    """Returns and lengths carry over batch boundaries; rewards that vary (Pendulum) are summed exactly."""
    env = make_vector_env("Pendulum-v1", 2, kwargs={"max_episode_steps": 7})
    push = TensorDictModule(lambda obs: obs[:, :1].sign() * 2.0, ["observation"], ["action"])
    collector = rlcore.Collector(env, push, frames_per_batch=2 * 5)
    collector.set_seed(0)
    batches, returns, lengths = [], [], []
    for _ in range(4):
        batches.append(collector.collect())
        returns += collector.finished_episodes[0].tolist()
        lengths += collector.finished_episodes[1].tolist()
    rewards = torch.cat([b["next", "reward"][..., 0] for b in batches], dim=1).double()  # [envs, 20]
    ends = torch.cat([b["next", "done"][..., 0] for b in batches], dim=1)
    expected = []  # (end step, env, return, length) of every episode that ended
    for env_index in range(2):
        start = 0
        for t in ends[env_index].nonzero().flatten().tolist():
            expected.append((t, env_index, float(rewards[env_index, start : t + 1].sum()), t + 1 - start))
            start = t + 1
    expected.sort()
    assert len(expected) == 4  # steps 6 and 13 of both envs: both episodes straddle a batch boundary
    assert lengths == [length for *_, length in expected] == [7] * 4
    assert returns == pytest.approx([ret for _, _, ret, _ in expected], rel=1e-5)


def test_seeding_reproduces_batches():
    def run():
        collector = rlcore.Collector(make_vector_env("CartPole-v1", 2), constant_policy(1), 40)
        collector.set_seed(7)
        return collector.collect()

    assert torch.equal(run()["observation"], run()["observation"])


def test_next_step_autoreset_env_is_refused():
    import gymnasium as gym

    env = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync")
    with pytest.raises(ValueError, match="SAME_STEP"):
        rlcore.Collector(env, constant_policy(), 8)


def test_async_vectorization():
    env = make_vector_env("CartPole-v1", 2, vectorization="async")
    try:
        batch = rlcore.Collector(env, constant_policy(), 16).collect()
        assert batch.batch_size == torch.Size([2, 8])
    finally:
        env.close()


@pytest.mark.slow
def test_unknown_env_id_names_it():
    with pytest.raises(rlcore.ConfigError, match="env.id: unknown env 'CartPol-v1'"):
        make_vector_env("CartPol-v1", 1)


def test_normalisation_wrappers_use_raw_returns_and_checkpoint_their_statistics():
    env = make_vector_env("CartPole-v1", 2, kwargs={"max_episode_steps": 5}, wrappers={"normalize_observation": {}, "normalize_reward": {}})
    collector = rlcore.Collector(env, constant_policy(0), frames_per_batch=40)
    collector.set_seed(0)
    batch = collector.collect()
    returns, _ = collector.finished_episodes
    assert returns.tolist() == [5.0] * len(returns)  # raw rewards, not the scaled ones
    assert not torch.allclose(batch["next", "reward"], torch.ones_like(batch["next", "reward"]))
    assert batch["observation"].abs().max() <= 10.0
    # final observations are normalised like the others
    done = batch["next", "done"][..., 0]
    assert batch["next", "observation"][done].abs().max() < 10.0
    states = env_states(env)
    assert set(states) == {"0:NormalizeReward", "1:NormalizeObservation"}
    other = make_vector_env("CartPole-v1", 1, wrappers={"normalize_observation": {}, "normalize_reward": {}})
    load_env_states(other, states)
    assert torch.equal(env_states(other)["1:NormalizeObservation"]["mean"], states["1:NormalizeObservation"]["mean"])


def test_evaluate_is_deterministic():
    from rlcore._app.evaluate import evaluate

    policy = TensorDictModule(lambda obs: (obs[:, 2] > 0).long(), ["observation"], ["action"])
    first = evaluate(policy, make_vector_env("CartPole-v1", 1), episodes=2, seed=5)
    second = evaluate(policy, make_vector_env("CartPole-v1", 1), episodes=2, seed=5)
    assert first == second and len(first["returns"]) == 2


def test_an_async_env_whose_wrapper_is_refused_is_closed(tmp_path):
    """The worker processes go with the error: the interpreter exits (it hung, waiting for them)."""
    import subprocess
    import sys

    code = "import rlcore\nrlcore.make_vector_env('CartPole-v1', 2, vectorization='async', wrappers={'nosuch': {}})\n"  # the error not caught
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 1 and "ConfigError: env.wrappers: unknown env wrapper 'nosuch'" in result.stderr, result.stderr


class _Steps(gymnasium.Env):
    """An env whose whole state is its step count, saved as docs/plugins.md says: ``state_dict``/``load_state_dict``."""

    observation_space = gymnasium.spaces.Box(0.0, 1e6, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, render_mode: str | None = None) -> None:
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.steps += 1
        return np.array([self.steps], np.float32), 1.0, self.steps >= 1000, False, {}

    def state_dict(self) -> dict:
        return {"steps": self.steps}

    def load_state_dict(self, state: dict) -> None:
        self.steps = int(state["steps"])


class _StepsPlugin:
    @rlcore.hookimpl
    def rl_register_envs(self) -> dict:
        return {"Steps-v0": _Steps}


class _FirstObservations:
    def __init__(self) -> None:
        self.seen: list[list[float]] = []

    @rlcore.hookimpl
    def rl_batch_process(self, batch) -> None:
        self.seen.append(batch["observation"][:, 0, 0].tolist())


def test_a_single_env_that_saves_itself_continues_its_episodes_after_a_resume(tmp_path):
    from rlcore_testing import make_trainer

    whole = _FirstObservations()
    make_trainer(tmp_path / "whole", plugins=[_StepsPlugin()], env_id="Steps-v0", total_frames=96, hooks={"seen": whole}).train()
    make_trainer(tmp_path / "stopped", plugins=[_StepsPlugin()], env_id="Steps-v0", total_frames=64).train()
    resumed = _FirstObservations()
    trainer = make_trainer(tmp_path / "stopped", plugins=[_StepsPlugin()], env_id="Steps-v0", total_frames=96, hooks={"seen": resumed})
    trainer.load_from_file()
    trainer.train()
    assert whole.seen == [[0.0, 0.0], [16.0, 16.0], [32.0, 32.0]]  # 2 envs x 16 steps a batch, one episode
    assert resumed.seen == whole.seen[-1:]  # the third batch goes on from step 32, not from a fresh episode


def test_dict_observations_are_a_tensordict_and_final_ones_are_kept_entry_by_entry():
    import rlcore_testing.envs  # noqa: F401  (registers DictBandit)

    env = make_vector_env("rlcore_testing.envs:DictBandit-v0", 3)  # one step an episode: every next observation is a final one
    policy = TensorDictModule(lambda obs: torch.zeros(obs.shape[:1], dtype=torch.int64), ["observation"], ["action"])
    collector = rlcore.Collector(env, policy, frames_per_batch=12)
    collector.set_seed(5)
    batch = collector.collect()
    assert batch["observation", "image"].shape == (3, 4, 10, 10, 3) and batch["observation", "image"].dtype == torch.uint8
    assert batch["observation", "flip"].shape == (3, 4, 1) and batch["next", "observation", "flip"].shape == (3, 4, 1)
    assert batch["next", "done"].all()
    final, following = batch["next", "observation", "image"][:, :-1], batch["observation", "image"][:, 1:]
    assert not torch.equal(final, following)  # the episode's own last observation, not the reset one
    state = collector.state_dict()
    assert set(state["observation"]) == {"image", "flip"}  # a plain dict of tensors in the checkpoint
    assert torch.equal(state["observation"]["flip"], collector.collect()["observation", "flip"][:, 0])  # where the next batch starts
