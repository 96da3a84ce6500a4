"""Each wrapper on a real env: the values it produces, its state saved and restored, its bad options refused."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from envs_helpers import assert_same, make, restore, rollout, save

import rlcore


def test_normalize_observation_and_reward_match_a_hand_computation() -> None:
    env = make("CartPole-v1", 2, {"normalize_observation": {}, "normalize_reward": {"gamma": 0.9}})
    raw = make("CartPole-v1", 2)
    space = env.single_observation_space  # normalised values: float32, unbounded (not CartPole's bounds)
    assert space.dtype == np.float32 and np.isinf(space.high).all() and space.shape == raw.single_observation_space.shape
    obs, _ = env.reset(seed=3)
    raw_obs, _ = raw.reset(seed=3)
    seen, returns, rets = [raw_obs], np.zeros(2), []
    for _ in range(30):
        action = np.array([1, 0])
        obs, reward, terminated, truncated, info = env.step(action)
        raw_obs, raw_reward, *_ = raw.step(action)
        seen.append(raw_obs)
        returns = returns * 0.9 + raw_reward
        rets.append(returns.copy())
        returns[terminated | truncated] = 0
    stacked = np.concatenate(seen)
    expected = np.clip((raw_obs - stacked.mean(0)) / np.sqrt(stacked.var(0) + 1e-8), -10, 10)
    np.testing.assert_allclose(obs, expected, rtol=1e-3, atol=1e-4)  # the running mean starts from a prior of weight 1e-4
    assert np.array_equal(info["raw_reward"], raw_reward)
    np.testing.assert_allclose(reward, raw_reward / np.sqrt(np.concatenate(rets).var() + 1e-8), rtol=1e-3)
    env.close()
    raw.close()


@pytest.mark.parametrize(
    "wrappers",
    [
        {"normalize_observation": {"clip": 1.5}},
        {"fixed_normalize_observation": {"steps": 50}},
        {"fixed_normalize_observation": {"source": "given", "loc": 0.5, "scale": 3.0, "clip": 0.1}},
    ],
)
def test_the_observation_module_is_the_transform_in_torch(wrappers: dict[str, dict[str, object]]) -> None:
    env = make("CartPole-v1", 2, wrappers)
    env.reset(seed=0)
    for _ in range(20):
        env.step(np.array([0, 1]))
    layer = next(layer for layer in rlcore.env_layers(env) if hasattr(layer, "observation_module"))
    obs = np.random.default_rng(0).normal(scale=2.0, size=(64, 4)).astype(np.float32)
    module = layer.observation_module()
    assert np.array_equal(module(torch.as_tensor(obs)).numpy(), layer.transform(obs))  # bit for bit, clipping included
    assert module.clip is None or (np.abs(layer.transform(obs)) == module.clip).any()  # (the bound is reached)
    env.close()


def test_fixed_normalization_from_bounds_from_a_rollout_and_given() -> None:
    bounds = make("MountainCar-v0", 2, {"fixed_normalize_observation": {"source": "bounds"}})
    raw = make("MountainCar-v0", 2)
    obs, _ = bounds.reset(seed=0)
    raw_obs, _ = raw.reset(seed=0)
    low, high = raw.single_observation_space.low, raw.single_observation_space.high
    np.testing.assert_allclose(obs, (raw_obs - (high + low) / 2) / ((high - low) / 2), rtol=1e-6)
    assert np.all(np.abs(obs) <= 1)

    env = make("CartPole-v1", 2, {"fixed_normalize_observation": {"steps": 200, "seed": 5}})
    assert env_state_loc(env) is None  # computed at the first reset, unless a checkpoint brings it
    env.reset(seed=1)
    stats = rlcore.get_stats_random_rollout(make("CartPole-v1", 2), steps=200, seed=5)
    np.testing.assert_allclose(env_state_loc(env), stats["loc"].numpy(), rtol=1e-6)
    frozen = make("CartPole-v1", 1, {"fixed_normalize_observation": {"steps": 200, "seed": 9}})
    restore_wrappers(frozen, env)
    frozen_obs, _ = frozen.reset(seed=4)  # no rollout of its own: the statistics came with the state
    np.testing.assert_allclose(env_state_loc(frozen), env_state_loc(env))
    plain, _ = make("CartPole-v1", 1).reset(seed=4)
    np.testing.assert_allclose(frozen_obs, (plain - stats["loc"].numpy()) / stats["scale"].numpy(), rtol=1e-5, atol=1e-6)

    given = make("CartPole-v1", 1, {"fixed_normalize_observation": {"source": "given", "loc": 1.0, "scale": [1, 2, 4, 8]}})
    obs, _ = given.reset(seed=4)
    np.testing.assert_allclose(obs, (plain - 1.0) / np.array([1, 2, 4, 8]), rtol=1e-6)


def env_state_loc(env):
    return env.loc


def restore_wrappers(target, source):
    from rlcore import env_states, load_env_states

    load_env_states(target, env_states(source))


@pytest.mark.parametrize(
    ("wrappers", "message"),
    [
        ({"fixed_normalize_observation": {"source": "bounds"}}, "fixed_normalize_observation.source: 'bounds' needs finite observation bounds"),
        ({"fixed_normalize_observation": {"source": "given"}}, "fixed_normalize_observation.loc: source 'given' needs loc and scale"),
        (
            {"fixed_normalize_observation": {"source": "kind"}},
            r"fixed_normalize_observation.source: unknown value 'kind' \(valid choices: rollout, bounds, given\)",
        ),
        ({"clip_reward": {"min_reward": 1, "max_reward": 0}}, "clip_reward.max_reward: expected a number > min_reward=1.0, got 0.0"),
        ({"frame_skip": {"skip": 1}}, "frame_skip.skip: expected an integer >= 2, got 1"),
        ({"normalize_observation": {}, "frame_stack": {}}, "frame_stack: changes what each env observes, so it comes before the vector-env wrappers"),
        (
            {"mask_observation": {"keep": [0, 5]}},
            r"mask_observation: does not fit the env \(keep: \[0, 5\] names entries the observation has not \(valid choices: 0 to 3\)\)",
        ),
        ({"pixels": {}}, r"env.wrappers.pixels: needs envs that render frames \(set env.kwargs.render_mode: rgb_array\)"),
        ({"pixels": {"key": "observation"}}, r"env.wrappers.pixels.key: expected a name of its own for the frames \(a batch has observation"),
        ({"pixels": {"key": "next.pixels"}}, r"env.wrappers.pixels.key: expected a name of its own .* got 'next.pixels'"),
    ],
)
def test_bad_options_are_one_line_naming_the_key(tmp_path, wrappers, message) -> None:
    with pytest.raises(rlcore.ConfigError, match=message) as caught:
        config = rlcore.load_config(overrides=["algo.name=ppo", f"env.wrappers={wrappers}", "trainer.total_frames=64"])
        rlcore.build_trainer(config, run_dir=tmp_path / "run")
    assert "\n" not in str(caught.value) and not (tmp_path / "run").exists()


def test_mask_observation_keeps_the_entries_asked_for_in_every_observation() -> None:
    masked, plain = make("CartPole-v1", wrappers={"mask_observation": {"keep": [2, 0]}}), make("CartPole-v1")
    assert masked.single_observation_space.shape == (2,)
    np.testing.assert_array_equal(masked.single_observation_space.high, plain.single_observation_space.high[[2, 0]])
    obs, _ = masked.reset(seed=4)
    raw, _ = plain.reset(seed=4)
    np.testing.assert_array_equal(obs, raw[:, [2, 0]])
    actions = [np.ones(2, dtype=np.int64)] * 30  # always right: episodes end, and their final observations are masked too
    for mine, theirs in zip(rollout(masked, actions), rollout(plain, actions), strict=True):
        np.testing.assert_array_equal(mine[0], theirs[0][:, [2, 0]])
        if theirs[4] is not None:
            ended = theirs[2] | theirs[3]
            np.testing.assert_array_equal(np.stack(mine[4][ended]), np.stack(theirs[4][ended])[:, [2, 0]])
    masked.close()
    plain.close()


def test_scale_and_clip_rewards_keep_the_raw_reward() -> None:
    env = make("Pendulum-v1", 2, {"scale_reward": {"scale": 0.5, "loc": 1.0}, "clip_reward": {"min_reward": -1.0, "max_reward": 0.5}})
    raw = make("Pendulum-v1", 2)
    env.reset(seed=0)
    raw.reset(seed=0)
    action = np.full((2, 1), 1.5, dtype=np.float32)
    _, reward, _, _, info = env.step(action)
    _, raw_reward, *_ = raw.step(action)
    assert np.array_equal(info["raw_reward"], raw_reward)  # the first wrapper that changes rewards sets it
    np.testing.assert_allclose(reward, np.clip(raw_reward * 0.5 + 1.0, -1.0, 0.5))
    clipped = make("CartPole-v1", 2, {"clip_reward": {"max_reward": 0.5}})  # alone: the env's own reward array is clipped
    clipped.reset(seed=0)
    _, reward, _, _, info = clipped.step(np.zeros(2, dtype=np.int64))
    assert reward.tolist() == [0.5, 0.5] and info["raw_reward"].tolist() == [1.0, 1.0]


def test_frame_skip_repeats_actions_and_ends_episodes_inside_the_skip() -> None:
    env = make("CartPole-v1", 2, {"frame_skip": {"skip": 3}})
    one = gymnasium.make("CartPole-v1")
    obs, _ = env.reset(seed=7)
    one_obs, _ = one.reset(seed=7)
    assert np.array_equal(obs[0], one_obs)
    steps, total = 0, 0.0
    while True:
        obs, reward, terminated, _truncated, info = env.step(np.array([1, 1]))
        frames, ended = [], False
        for _ in range(3):
            frame, r, term, trunc, _ = one.step(1)
            frames.append(frame)
            total += r
            if term or trunc:
                ended = True
                break
        steps += 1
        if ended:
            assert terminated[0] and np.array_equal(info["final_obs"][0], np.maximum(frames[-2], frames[-1]) if len(frames) > 1 else frames[-1])
            assert reward[0] == len(frames)
            break
        assert np.array_equal(obs[0], np.maximum(frames[-2], frames[-1])) and reward[0] == 3.0
    assert 2 <= steps < 20  # CartPole pushed right falls within a few dozen frames


class _Counter(gymnasium.Env):
    """Observes how many steps it took; terminates at step ``end``."""

    observation_space = gymnasium.spaces.Box(0, 100, (1,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, end: int) -> None:
        self.end, self.t = end, 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.full(1, self.t, np.float32), 1.0, self.t == self.end, False, {}


@pytest.mark.parametrize(("end", "expected"), [(5, 5.0), (6, 6.0), (8, 8.0)])
def test_frame_skip_ending_inside_the_skip_returns_its_own_last_frames(end: int, expected: float) -> None:
    from rl_plugin_envs._inside import FrameSkip

    env = FrameSkip(_Counter(end), skip=4)
    env.reset()
    assert env.step(0)[0][0] == 4.0  # frames 3 and 4, pooled
    obs, reward, terminated, *_ = env.step(0)  # ends at frame `end`, inside or at the end of the skip
    assert terminated and obs[0] == expected and reward == end - 4  # Gymnasium's own gave frame 4 back for end=5


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_inside_wrappers_save_and_restore_the_envs_exactly(vectorization) -> None:
    wrappers = {"frame_skip": {"skip": 2}, "time_limit": {"max_episode_steps": 9}, "frame_stack": {"stack_size": 3}, "normalize_observation": {}}
    env = make("CartPole-v1", 2, wrappers, vectorization=vectorization)
    assert env.single_observation_space.shape == (3, 4)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    rollout(env, [rng.integers(0, 2, 2) for _ in range(13)])
    state = save(env)
    assert state[1] is not None  # every layer of every env can be saved
    actions = [rng.integers(0, 2, 2) for _ in range(25)]
    first = rollout(env, actions)
    assert any(row[3].any() for row in first)  # the time limit of 9 steps truncates
    other = make("CartPole-v1", 2, wrappers, vectorization=vectorization)
    other.reset(seed=123)
    restore(other, state)
    assert_same(rollout(other, actions), first)
    env.close()
    other.close()


def test_import_path_wraps_each_env_or_the_vector_env() -> None:
    from rl_plugin_envs import import_path

    clip = import_path("gymnasium.wrappers.ClipAction")
    env = clip(make("Pendulum-v1", 1))
    raw = make("Pendulum-v1", 1)
    env.reset(seed=0)
    raw.reset(seed=0)
    far, edge = np.full((1, 1), 50.0, dtype=np.float32), np.full((1, 1), 2.0, dtype=np.float32)
    assert np.array_equal(env.step(far)[0], raw.step(edge)[0])  # clipped to the bound inside each env
    under = clip(make("Pendulum-v1", 1, {"normalize_reward": {}}))  # an action wrapper goes inside, under a vector wrapper
    assert type(under).__name__ == "NormalizeReward" and type(under.env.envs[0]).__name__ == "ClipAction"
    rescale = import_path("gymnasium.wrappers.vector.RescaleAction")
    assert type(rescale(make("Pendulum-v1", 1), min_action=-1.0, max_action=1.0)).__name__ == "RescaleAction"
    for path, message in [("gymnasium.wrappers.NoSuchWrapper", "cannot import"), ("collections.OrderedDict", "is not a Gymnasium wrapper class")]:
        with pytest.raises(rlcore.ConfigError, match=f"env.wrappers.{path}: .*{message}"):
            import_path(path)
    assert rlcore.validate_options("env.wrappers.x", clip, {}, ("env",)) == {}


@pytest.mark.slow
def test_a_wrapper_by_import_path_takes_a_callable_by_its_import_path_and_an_array_as_a_list(tmp_path) -> None:
    pytest.importorskip("rl_plugin_pg")
    wrappers = '{gymnasium.wrappers.TransformReward: {func: "operator:neg"}, gymnasium.wrappers.RescaleAction: {min_action: -1, max_action: [0.5]}}'
    overrides = ["algo.name=ppo", "env.id=Pendulum-v1", f"env.wrappers={wrappers}", "collector.frames_per_batch=256", "trainer.total_frames=512"]
    config = rlcore.load_config(overrides=overrides)
    env = rlcore.make_vector_env("Pendulum-v1", 1, wrappers=config["env"]["wrappers"])
    assert env.single_action_space.high.tolist() == [0.5] and env.single_action_space.low.tolist() == [-1.0]
    env.reset(seed=0)
    assert all(env.step(np.array([[0.5]], dtype=np.float32))[1][0] >= 0 for _ in range(5))  # Pendulum's costs, negated
    env.close()
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    trainer.train()
    assert "func: operator:neg" in (tmp_path / "run" / "config.yaml").read_text()
    more = rlcore.load_config(tmp_path / "run" / "config.yaml", overrides=["trainer.total_frames=1024"])
    resumed = rlcore.build_trainer(more, run_dir=tmp_path / "run", resume=True)
    resumed.train()
    assert resumed.collected_frames == 1024
    for value, expected in [(1, "expected a callable"), ("operator:nope", "expected a callable"), ('"x"', "expected")]:
        bad = [*overrides[:2], f'env.wrappers={{gymnasium.wrappers.TransformReward: {{func: {value}}}}}']
        with pytest.raises(rlcore.ConfigError, match=r"^env.wrappers.gymnasium.wrappers.TransformReward.func: " + expected):
            rlcore.load_config(overrides=bad)


def test_a_wrapper_class_and_a_function_of_the_working_directory_by_import_path(tmp_path, monkeypatch) -> None:
    (tmp_path / "mywrappers.py").write_text(
        "import gymnasium\n"
        "class Doubled(gymnasium.RewardWrapper):\n"
        "    def __init__(self, env, factor: float = 2.0):\n"
        "        super().__init__(env)\n"
        "        self.factor = factor\n"
        "    def reward(self, reward):\n"
        "        return self.factor * reward\n"
        "def plus_one(reward):\n"
        "    return reward + 1\n"
    )
    monkeypatch.chdir(tmp_path)  # as `rlctl` is run beside the module: the working directory is not on sys.path
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", str(tmp_path))])
    wrappers = '{mywrappers.Doubled: {factor: 3}, gymnasium.wrappers.TransformReward: {func: "mywrappers:plus_one"}}'
    config = rlcore.load_config(overrides=["algo.name=ppo", "env.id=CartPole-v1", f"env.wrappers={wrappers}"])
    env = rlcore.make_vector_env("CartPole-v1", 2, wrappers=config["env"]["wrappers"])
    env.reset(seed=0)
    assert env.step(np.array([0, 1]))[1].tolist() == [4.0, 4.0]  # CartPole's 1, tripled, plus one
    env.close()
    with pytest.raises(rlcore.ConfigError, match=r"^env.wrappers.mywrappers.Nope: cannot import"):
        rlcore.load_config(overrides=["algo.name=ppo", "env.id=CartPole-v1", "env.wrappers={mywrappers.Nope: {}}"])
    (tmp_path / "broken.py").write_text("def scale(r) return r\n")  # a module that does not import: one line, not a traceback
    with pytest.raises(rlcore.ConfigError, match=r"^env.wrappers.broken.Thing: cannot import 'broken.Thing' \(SyntaxError: "):
        rlcore.load_config(overrides=["algo.name=ppo", "env.id=CartPole-v1", "env.wrappers={broken.Thing: {}}"])
    with pytest.raises(rlcore.ConfigError, match=r"^env.wrappers.gymnasium.wrappers.TransformReward.func: expected a callable"):
        rlcore.load_config(overrides=["algo.name=ppo", "env.id=CartPole-v1", 'env.wrappers={gymnasium.wrappers.TransformReward: {func: "broken:scale"}}'])


def test_a_gymnasium_wrapper_refusing_its_options_is_one_line() -> None:
    wrappers = {"gymnasium.wrappers.vector.NormalizeReward": {"gamma": 5}}  # Gymnasium raises its InvalidBound
    message = r"^env.wrappers.gymnasium.wrappers.vector.NormalizeReward: does not fit the env \(`gamma` should be in the interval \[0, 1\]"
    with pytest.raises(rlcore.ConfigError, match=message):
        rlcore.make_vector_env("CartPole-v1", 2, wrappers=wrappers)


def test_import_path_from_the_config() -> None:
    config = rlcore.load_config(overrides=["algo.name=ppo", "env.id=Pendulum-v1", "env.wrappers={gymnasium.wrappers.ClipAction: {}}"])
    # the wrappers given replace PPO's Pendulum default (normalize_reward): they are a pipeline, in the order listed
    assert list(config["env"]["wrappers"]) == ["gymnasium.wrappers.ClipAction"]
    assert list(rlcore.load_config(overrides=["algo.name=ppo", "env.id=Pendulum-v1"])["env"]["wrappers"]) == ["normalize_reward"]


def test_a_null_wrapper_takes_it_out_of_the_algorithms_pipeline_and_a_given_pipeline_replaces_it() -> None:
    pytest.importorskip("rl_plugin_pg")

    def wrappers(*overrides: str) -> dict:
        return rlcore.load_config(overrides=["algo.name=ppo", "env.id=Pendulum-v1", *overrides])["env"]["wrappers"]

    preset = {"normalize_reward": {"gamma": 0.9, "epsilon": 1e-8, "clip": 10.0}}  # PPO's preset for Pendulum, the defaults written out
    assert wrappers() == preset
    assert wrappers("env.wrappers.normalize_reward=null") == {}
    assert wrappers("env.wrappers.clip_reward=null") == preset  # nothing to take out
    assert wrappers("env.wrappers={clip_reward: {max_reward: 1}, normalize_reward: null}") == {"clip_reward": {"min_reward": -1.0, "max_reward": 1.0}}


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_a_stateless_gymnasium_wrapper_by_import_path_keeps_resume_exact(vectorization: str) -> None:
    from rlcore import base_env

    env = rlcore.make_vector_env("Pendulum-v1", 2, vectorization=vectorization, wrappers={"gymnasium.wrappers.ClipAction": {}})
    env.reset(seed=0)
    action = np.full((2, 1), 3.0, dtype=np.float32)  # clipped to the bounds
    for _ in range(3):
        env.step(action)
    state = base_env(env).env_state()
    assert state is not None  # ClipAction's function describes it, holds no state
    expected = [env.step(action)[0] for _ in range(2)]
    base_env(env).load_env_state(state)
    assert all(np.array_equal(env.step(action)[0], obs) for obs in expected)
    assert base_env(env).unsaveable() is None
    env.close()
    kept = rlcore.make_vector_env("Pendulum-v1", 1, vectorization=vectorization, wrappers={"gymnasium.wrappers.RecordEpisodeStatistics": {}})
    kept.reset(seed=0)
    assert base_env(kept).env_state() is None  # its deques are state this module does not save: fresh episodes on resume
    assert base_env(kept).unsaveable() == "RecordEpisodeStatistics"  # what the resumed run's warning names
    kept.close()


@pytest.mark.parametrize("name", ["normalize_observation", "fixed_normalize_observation"])
def test_normalising_images_says_they_become_floats_for_an_mlp(name: str) -> None:
    pytest.importorskip("minatar")
    with pytest.warns(UserWarning, match=rf"^env.wrappers.{name}: normalised, the bool images \(10, 10, 4\) become floats"):
        env = make("MinAtar/Breakout-v1", 1, {name: {}})
    assert env.single_observation_space.dtype == np.float32
    env.close()


@pytest.mark.parametrize(
    ("path", "options", "reward"),
    [
        ("gymnasium.wrappers.TransformReward", '{func: "operator:neg"}', -1.0),  # CartPole's +1 a step, negated
        ("gymnasium.wrappers.vector.TransformReward", '{func: "operator:neg"}', -1.0),
        ("gymnasium.wrappers.vector.ClipReward", "{min_reward: 0, max_reward: 0.5}", 0.5),  # (it clips its array in place)
    ],
)
def test_a_reward_wrapper_by_import_path_leaves_returns_in_the_envs_scale(tmp_path, path, options, reward) -> None:
    pytest.importorskip("rl_plugin_pg")
    wrappers = f"{{{path}: {options}}}"  # what the policy learns from
    overrides = ["algo.name=ppo", "env.id=CartPole-v1", "env.num_envs=4", f"env.wrappers={wrappers}", "collector.frames_per_batch=256"]
    trainer = rlcore.build_trainer(rlcore.load_config(overrides=[*overrides, "trainer.total_frames=1024"]), run_dir=tmp_path / "run")
    trainer.train()
    logged = {name: values for name, (_, values) in rlcore.read_metrics(tmp_path / "run").items()}
    assert logged["train/episode_return"] == logged["train/episode_length"]  # every step's +1, the last one's too
    env = rlcore.make_vector_env("CartPole-v1", 2, wrappers=trainer.config["env"]["wrappers"])
    env.reset(seed=0)
    assert env.step(np.array([0, 1]))[1].tolist() == [reward, reward]  # what the algorithm learns from
    report = rlcore.evaluate(trainer.loss_module.policy, env, 3, seed=1)
    assert report["returns"] == [float(n) for n in report["lengths"]]
    env.close()


def test_returns_stay_in_the_envs_scale_with_a_reward_wrapper_inside_frame_skip(tmp_path) -> None:
    wrappers = {"gymnasium.wrappers.TransformReward": {"func": "operator:neg"}, "frame_skip": {"skip": 4}}  # the reward wrapper innermost
    config = rlcore.load_config(overrides=["algo.name=ppo", "env.id=CartPole-v1", f"env.wrappers={wrappers}"])
    env = rlcore.make_vector_env("CartPole-v1", 2, wrappers=config["env"]["wrappers"])
    report = rlcore.evaluate(lambda td: td.set("action", torch.zeros(2, dtype=torch.int64)), env, 4, seed=0)  # always left: short episodes
    env.close()
    plain = rlcore.make_vector_env("CartPole-v1", 2)
    frames = rlcore.evaluate(lambda td: td.set("action", torch.zeros(2, dtype=torch.int64)), plain, 4, seed=0)["lengths"]
    plain.close()
    # CartPole's +1 a frame, every frame of the skips counted, the last step's too (its env's info comes in final_info)
    assert sorted(report["returns"]) == sorted(float(n) for n in frames) and all(r > 2 * n for r, n in zip(report["returns"], report["lengths"], strict=True))


@pytest.mark.parametrize("name", ["normalize_observation", "fixed_normalize_observation"])
def test_normalising_dict_observations_is_refused_in_one_line(tmp_path, name) -> None:
    import rlcore_testing.envs  # noqa: F401  (registers DictBandit)

    config = rlcore.load_config(overrides=["algo.name=ppo", "env.id=rlcore_testing.envs:DictBandit-v0", f"env.wrappers.{name}={{}}", "trainer.total_frames=64"])
    with pytest.raises(rlcore.ConfigError, match=rf"^env.wrappers.{name}: normalises Box observations, the env's are Dict: Dict\('flip'"):
        rlcore.build_trainer(config, run_dir=tmp_path / "run")
