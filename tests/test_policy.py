"""``rlcore.load_policy``: a trained run's policy acting on raw env observations, through the run's own wrappers.

Each test trains a short real run, then steps a raw Gymnasium env beside the run's own env (wrappers,
statistics), both reset with one seed: the raw env's twin inside the run's env autoresets from the same
generator, so the two stay in step as long as they get the same actions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

import rlcore

RESCALE = "gymnasium.wrappers.RescaleAction"


def _train(run_dir: Path, algo: str, env_id: str, wrappers: dict[str, Any], frames: int = 512, **algo_options: Any) -> Path:
    config = {
        "algo": {"name": algo, **algo_options},
        "env": {"id": env_id, "num_envs": 2 if algo == "ppo" else 1, "wrappers": wrappers},
        "trainer": {"total_frames": frames, "seed": 1, "progress_bar": False},
        "loggers": {},
    }
    if algo == "ppo":
        config["collector"] = {"frames_per_batch": 256}
    rlcore.build_trainer(config, run_dir).train()
    return run_dir


def _inside(policy: rlcore.Policy, obs: np.ndarray, state: dict[str, torch.Tensor], start: bool) -> tuple[np.ndarray, dict[str, torch.Tensor]]:
    """The run's policy on the run env's (wrapped) observation, deterministic, as evaluation runs it: the action, and
    the state a recurrent policy hands on under ``next`` (TorchRL's convention), which comes back at the next step."""
    inputs = TensorDict({"observation": torch.as_tensor(obs, dtype=torch.float32), **state}, batch_size=[len(obs)])
    if "is_init" in policy.module.in_keys:
        inputs["is_init"] = torch.full((len(obs), 1), start)
    with torch.no_grad(), set_interaction_type(InteractionType.DETERMINISTIC):
        out = policy.module(inputs)
    handed = out.get("next", None)
    return out["action"].numpy(), {} if handed is None else dict(handed.items())


def _side_by_side(policy: rlcore.Policy, env_id: str, steps: int, seed: int = 3) -> tuple[list[Any], list[Any], int]:
    """Step the run's env with its policy and a raw twin with ``predict``'s actions: both actions per step, and the episodes."""
    env, raw = policy.make_env(1), gymnasium.make(env_id)
    obs, _ = env.reset(seed=seed)
    raw_obs, _ = raw.reset(seed=seed)
    start, inside_actions, raw_actions, episodes = True, [], [], 0
    carried: dict[str, torch.Tensor] = {}
    state = None
    try:
        for _ in range(steps):
            inside, carried = _inside(policy, obs, carried, start)
            action, state = policy.predict(raw_obs, state, episode_start=start)
            if not carried:
                assert state is None
            else:  # predict hands on the same state, of one observation
                assert state.keys() == carried.keys()
                for key, value in carried.items():
                    np.testing.assert_allclose(state[key], value[0].numpy(), rtol=0, atol=1e-6)
            inside_actions.append(inside[0])
            raw_actions.append(action)
            obs, reward, terminated, truncated, _ = env.step(inside)
            raw_obs, raw_reward, raw_terminated, raw_truncated, _ = raw.step(action)
            assert raw_reward == pytest.approx(float(reward[0]), abs=1e-5)  # the twins are in step
            assert (raw_terminated or raw_truncated) == bool(terminated[0] or truncated[0])
            start = raw_terminated or raw_truncated
            if start:
                raw_obs, _ = raw.reset()
                episodes += 1
    finally:
        env.close()
        raw.close()
    return inside_actions, raw_actions, episodes


@pytest.mark.slow
def test_predict_with_a_frame_stack_and_normalised_observations(tmp_path: Path) -> None:
    wrappers = {"frame_stack": {"stack_size": 3}, "normalize_observation": {}}
    policy = rlcore.load_policy(_train(tmp_path / "run", "ppo", "CartPole-v1", wrappers))
    assert policy.observation_space.shape == (4,)  # the raw env's; the network sees (3, 4), normalised
    assert policy.frames == 512
    inside, raw, episodes = _side_by_side(policy, "CartPole-v1", 300)
    assert episodes >= 3  # the frame stack started afresh at every episode
    assert [int(a) for a in raw] == [int(a) for a in inside]
    policy.close()


@pytest.mark.slow
def test_predict_carries_a_recurrent_state_and_restarts_it_at_episode_starts(tmp_path: Path) -> None:
    wrappers = {"mask_observation": {"keep": [0, 2]}, "normalize_observation": {}}
    run = _train(tmp_path / "run", "ppo", "CartPole-v1", wrappers, recurrent={"hidden_size": 16, "seq_len": 8})
    policy = rlcore.load_policy(run)
    assert policy.observation_space.shape == (4,)  # the raw env's; the network sees position and angle, normalised
    inside, raw, episodes = _side_by_side(policy, "CartPole-v1", 300)
    assert episodes >= 3
    assert [int(a) for a in raw] == [int(a) for a in inside]
    rows = np.zeros((3, 4), dtype=np.float32)
    _, state = policy.predict(rows)  # a batch: the state of each row
    assert state is not None and state["recurrent_state_h"].shape == (3, 1, 16)
    _, again = policy.predict(rows, state)
    _, fresh = policy.predict(rows, state, episode_start=[True, False, True])  # rows 0 and 2 restart
    for key in again:
        np.testing.assert_array_equal(fresh[key][1], again[key][1])
        assert not np.allclose(fresh[key][0], again[key][0])
        np.testing.assert_array_equal(fresh[key][0], state[key][0])  # (a restart from zeros on the same input)
    policy.close()


@pytest.mark.slow
def test_predict_rescales_actions_with_normalised_observations(tmp_path: Path) -> None:
    wrappers = {"normalize_observation": {}, RESCALE: {"min_action": -1.0, "max_action": 1.0}}
    policy = rlcore.load_policy(_train(tmp_path / "run", "sac", "Pendulum-v1", wrappers, frames=300))
    assert (policy.action_space.low, policy.action_space.high) == (pytest.approx([-2.0]), pytest.approx([2.0]))
    inside, raw, _ = _side_by_side(policy, "Pendulum-v1", 250)
    # the run acts in [-1, 1]; predict's actions are the raw env's, rescaled to [-2, 2] by the run's own wrapper
    np.testing.assert_allclose(np.stack(raw), 2.0 * np.stack(inside), rtol=0, atol=1e-6)
    assert np.abs(np.stack(inside)).max() > 0.05  # (a policy that always says 0 would prove nothing)
    policy.close()


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _train(tmp_path_factory.mktemp("policy") / "run", "ppo", "CartPole-v1", {"normalize_observation": {}})


def test_one_or_a_batch_numpy_or_torch(cartpole_run: Path) -> None:
    with rlcore.load_policy(cartpole_run) as policy:
        rows = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
        batch, _ = policy.predict(rows)
        assert isinstance(batch, np.ndarray) and batch.shape == (6,)
        singles = [policy.predict(row)[0] for row in rows]
        assert all(isinstance(a, np.ndarray) and a.shape == () for a in singles)
        assert [int(a) for a in singles] == batch.tolist()
        tensor, _ = policy.predict(torch.as_tensor(rows))
        assert isinstance(tensor, torch.Tensor) and tensor.tolist() == batch.tolist()
        with pytest.raises(ValueError, match=r"fits neither one observation \(4,\) nor a batch \(N, 4\)"):
            policy.predict(np.zeros((2, 5)))


def test_sampled_actions_differ_from_deterministic_ones(cartpole_run: Path) -> None:
    with rlcore.load_policy(cartpole_run) as policy:
        rows = np.zeros((200, 4), dtype=np.float32)
        assert len(set(policy.predict(rows)[0].tolist())) == 1
        assert len(set(policy.predict(rows, deterministic=False)[0].tolist())) == 2


def test_a_checkpoint_or_its_run_and_bad_paths(cartpole_run: Path, tmp_path: Path) -> None:
    checkpoint = next((cartpole_run / "checkpoints").iterdir())
    with rlcore.load_policy(checkpoint) as policy:
        assert policy.checkpoint == checkpoint
        assert "ppo on CartPole-v1" in repr(policy)
    with pytest.raises(rlcore.ConfigError, match="no such run directory or checkpoint"):
        rlcore.load_policy(tmp_path / "nothing")
    with pytest.raises(rlcore.ConfigError, match="config.yaml: cannot read config file"):
        rlcore.load_policy(tmp_path)
    (tmp_path / "model.pt").write_bytes(b"")
    with pytest.raises(rlcore.ConfigError, match="model.pt: not a checkpoint of a run"):
        rlcore.load_policy(tmp_path / "model.pt")


def test_raw_observations_or_the_wrapped_env_s(cartpole_run: Path) -> None:
    rows = np.random.default_rng(1).normal(size=(8, 4)).astype(np.float32)
    with rlcore.load_policy(cartpole_run) as policy, rlcore.load_policy(cartpole_run, preprocess=False) as plain:
        env = plain.make_env(1)
        normalise = env.transform  # the run's frozen normalisation
        env.close()
        assert policy.predict(rows)[0].tolist() == plain.predict(normalise(rows))[0].tolist()


def test_dict_observations_one_or_a_batch(tmp_path: Path) -> None:
    import rlcore_testing.envs  # noqa: F401  (registers DictBandit)

    run = _train(tmp_path / "run", "ppo", "rlcore_testing.envs:DictBandit-v0", {}, frames=256)
    with rlcore.load_policy(run) as policy:
        space = policy.observation_space
        rows = [space.sample() for _ in range(5)]
        batch = {key: np.stack([row[key] for row in rows]) for key in ("image", "flip")}
        actions, state = policy.predict(batch)
        assert state is None and actions.shape == (5,)
        assert [int(policy.predict(row)[0]) for row in rows] == actions.tolist()
        inputs = TensorDict({key: torch.as_tensor(value) for key, value in batch.items()}, [5])
        with torch.no_grad(), set_interaction_type(InteractionType.DETERMINISTIC):  # the module on the TensorDict of both entries
            assert policy.module(TensorDict({"observation": inputs}, [5]))["action"].tolist() == actions.tolist()
        with pytest.raises(ValueError, match=r"^predict: a Dict observation has the entries flip, image, got image$"):
            policy.predict({"image": batch["image"]})
        with pytest.raises(ValueError, match=r"^predict: the entries of a Dict observation are one observation in some and a batch in others$"):
            policy.predict({"image": batch["image"], "flip": batch["flip"][0]})


@pytest.mark.slow
def test_an_atari_run_acts_on_its_own_preprocessed_env(tmp_path: Path) -> None:
    """Atari preprocessing reads the emulator's screen at every skipped frame (a max over the last two): no function of a
    raw env's observations rebuilds it, so predict takes the observations of the run's own env, as SB3's predict does."""
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    wrappers = {"atari": {"noop_max": 0}, "frame_stack": {"stack_size": 4}}
    config = {
        "algo": {"name": "ppo", "epochs": 1},
        "env": {"id": "ALE/Pong-v5", "num_envs": 2, "wrappers": wrappers, "kwargs": {"repeat_action_probability": 0.0}},
        "collector": {"frames_per_batch": 64},
        "trainer": {"total_frames": 64, "seed": 1, "progress_bar": False},
        "loggers": {},
    }
    rlcore.build_trainer(config, tmp_path / "run").train()
    with pytest.raises(rlcore.ConfigError, match=r"^load_policy: .*atari.*: it cannot take given observations; load_policy\(\.\.\., preprocess=False\)"):
        rlcore.load_policy(tmp_path / "run")
    with rlcore.load_policy(tmp_path / "run", preprocess=False) as policy:
        assert policy.observation_space.shape == (4, 84, 84)
        env = policy.make_env(1)
        obs, _ = env.reset(seed=0)
        try:
            for _ in range(50):
                action, _ = policy.predict(obs)
                inside, _ = _inside(policy, obs, {}, False)
                assert action.tolist() == inside.tolist()
                obs, *_ = env.step(action)
        finally:
            env.close()
