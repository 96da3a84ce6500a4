"""The ``evaluation`` hook in short real training runs, the kernel's evaluation loop recording through a
``VideoRecorder``, the hook's options, and ``rlctl eval --video``."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from video_helpers import ENV_ID, TinyAlgorithm, TinyLoss, VideoListLogger, build_trainer, decode, make_env, read_metrics

import rlcore
from rl_plugin_video import VideoRecorder


class StopAfterFirstBatch:
    """Ends training early, as early stopping does."""

    @rlcore.hookimpl
    def rl_post_steps(self, trainer: Any) -> None:
        trainer.stop()


def test_evaluation_logs_returns_and_records_videos(run_dir: Path) -> None:
    video_logger = VideoListLogger(log_dir=run_dir)
    options = {"record_interval": 64, "episodes": 1, "video": True, "fps": 20, "skip": 2}
    trainer, hooks = build_trainer(run_dir, {"evaluation": options}, frames_per_batch=32, total_frames=128, loggers=(video_logger,))
    trainer.train()

    returns = read_metrics(run_dir, "eval/episode_return")
    lengths = read_metrics(run_dir, "eval/episode_length")
    assert [frames for frames, _ in returns] == [64, 128]  # every 64 frames; the last batch is not evaluated twice
    assert [frames for frames, _ in lengths] == [64, 128]
    for (frames, length), (_, episode_return) in zip(lengths, returns):
        assert episode_return == length  # CartPole pays 1 per step
        video = decode(run_dir / "videos" / f"eval_{frames:09d}.mp4")
        assert video.shape == (math.ceil(length / 2), 400, 600, 3)  # one frame per action, one in 2 kept
    assert [(name, step, fps) for name, _, step, fps in video_logger.videos] == [("eval/video", 64, 20), ("eval/video", 128, 20)]
    assert trainer.policy.training  # restored after each evaluation
    assert trainer.state_dict()["modules"]["evaluation"] == {"next_eval": 192, "last_eval": 128}
    assert hooks["evaluation"].last.video == run_dir / "videos" / "eval_000000128.mp4"


def test_resumed_run_goes_on_with_the_evaluation_schedule(run_dir: Path) -> None:
    options = {"record_interval": 64, "episodes": 1}
    first, _ = build_trainer(run_dir, {"evaluation": options}, total_frames=64, checkpoint=True)
    first.train()
    resumed, hooks = build_trainer(run_dir, {"evaluation": options}, total_frames=128, checkpoint=True)
    resumed.load_from_file()
    assert hooks["evaluation"].state_dict() == {"next_eval": 128, "last_eval": 64}
    resumed.train()
    assert [frames for frames, _ in read_metrics(run_dir, "eval/episode_return")] == [64, 128]


def test_final_evaluation_when_training_stops_early(run_dir: Path) -> None:
    options = {"record_interval": 0, "episodes": 3}
    trainer, hooks = build_trainer(run_dir, {"evaluation": options}, total_frames=1000, plugins=(StopAfterFirstBatch(),))
    trainer.train()
    result = hooks["evaluation"].last
    assert len(result.returns) == 3
    assert read_metrics(run_dir, "eval/episode_return") == [(32, pytest.approx(np.mean(result.returns)))]
    assert read_metrics(run_dir, "eval/episode_length") == [(32, pytest.approx(np.mean(result.lengths)))]
    assert not (run_dir / "videos").exists()


def test_env_option_when_the_trainer_has_no_make_env(run_dir: Path) -> None:
    trainer, _ = build_trainer(run_dir, {"evaluation": {"env": ENV_ID, "episodes": 1}}, total_frames=32, with_make_env=False)
    trainer.train()
    assert len(read_metrics(run_dir, "eval/episode_return")) == 1


def test_no_env_to_evaluate_on_is_a_config_error(run_dir: Path) -> None:
    trainer, _ = build_trainer(run_dir, {"evaluation": {}}, total_frames=32, with_make_env=False)
    with pytest.raises(rlcore.ConfigError, match=r"hooks\.evaluation\.env"):
        trainer.train()


def test_an_unknown_env_id_is_refused_under_the_hooks_key_before_training(run_dir: Path) -> None:
    trainer, _ = build_trainer(run_dir, {"evaluation": {"env": "CartPol-v1", "episodes": 1}}, total_frames=32)
    with pytest.raises(rlcore.ConfigError, match=r"^hooks.evaluation.env: unknown env 'CartPol-v1' \(.*did you mean CartPole-v0, CartPole-v1\?\)$"):
        trainer.train()
    assert trainer.collected_frames == 0


def test_kernel_evaluation_records_one_frame_per_action_of_the_first_episode(tmp_path: Path) -> None:
    policy = TinyLoss().policy
    recorder = VideoRecorder(tmp_path, prefix="eval", skip=2)
    env = make_env(2, render_mode="rgb_array")
    result = rlcore.evaluate(policy, env, 3, seed=3, on_frame=recorder.add)
    env.close()
    assert policy.training  # put in eval mode for the evaluation only
    assert len(result["returns"]) == 3 and result["returns"] == [float(n) for n in result["lengths"]]
    alone = rlcore.evaluate(policy, make_env(1), 1, seed=3)["lengths"][0]  # env 0 of both is reset with seed 3
    assert decode(recorder.dump(step=0)).shape == (math.ceil(alone / 2), 400, 600, 3)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"record_interval": "x"}, "hooks.evaluation.record_interval: expected an integer >= 0, got 'x'"),
        ({"episodes": 0}, "hooks.evaluation.episodes: expected an integer >= 1 or null, got 0"),
        ({"skip": True}, "hooks.evaluation.skip: expected an integer >= 1, got True"),
    ],
)
def test_bad_options_are_the_same_one_line_errors_from_python_and_config(options: dict[str, Any], message: str) -> None:
    pm = rlcore.get_plugin_manager(only=["rl-plugin-video"])
    with pytest.raises(rlcore.ConfigError) as from_python:
        pm.factory("hooks", "evaluation")(**options)
    assert str(from_python.value) == message
    pm.add_plugin(TinyAlgorithm(), "tiny-algorithm")
    with pytest.raises(rlcore.ConfigError) as from_config:
        rlcore.load_config(plugin_manager=pm, algo={"name": "tiny"}, hooks={"evaluation": options})
    assert str(from_config.value) == message


def test_episodes_or_record_frames_must_be_set() -> None:
    factory = rlcore.get_plugin_manager(only=["rl-plugin-video"]).factory("hooks", "evaluation")
    with pytest.raises(rlcore.ConfigError, match=r"^hooks.evaluation.episodes: set episodes or record_frames \(both are null\)$"):
        factory(episodes=None)
    assert factory(episodes=None, record_frames=100).record_frames == 100


def test_options_are_converted_as_people_write_them() -> None:
    hook = rlcore.get_plugin_manager(only=["rl-plugin-video"]).factory("hooks", "evaluation")(record_interval=1e4, record_frames=2e3)
    assert (hook.record_interval, hook.record_frames) == (10_000, 2_000)
    assert isinstance(hook.record_interval, int)


@pytest.mark.slow
def test_rlctl_eval_video_records_the_first_episode(run_dir: Path) -> None:
    pm = rlcore.get_plugin_manager(only=["rl-plugin-video"])
    pm.add_plugin(TinyAlgorithm(), "tiny-algorithm")
    config = {"algo": {"name": "tiny"}, "collector": {"frames_per_batch": 32}, "trainer": {"total_frames": 32, "progress_bar": False}}
    rlcore.build_trainer(config, run_dir, plugin_manager=pm).train()
    cli = rlcore.build_cli(pm)  # rlctl's group, with the commands of the plugins of pm (the test's algorithm among them)
    runner = CliRunner()

    recorded = runner.invoke(cli, ["eval", str(run_dir), "--episodes", "2", "--video", "--fps", "12"], catch_exceptions=False)
    assert recorded.exit_code == 0, recorded.output
    report = json.loads(recorded.output)
    assert report["video"] == str(run_dir / "videos" / "eval_000000032.mp4") and report["frames"] == 32
    assert decode(Path(report["video"])).shape == (report["lengths"][0], 400, 600, 3)  # one frame per action
    assert len(report["returns"]) == 2

    plain = runner.invoke(cli, ["eval", str(run_dir), "--episodes", "1"], catch_exceptions=False)
    assert plain.exit_code == 0 and json.loads(plain.output)["video"] is None
    assert len(list((run_dir / "videos").iterdir())) == 1
    bad = runner.invoke(cli, ["eval", str(run_dir), "--video", "--fps", "0"])
    assert bad.exit_code == 2 and "--fps" in bad.output


def test_eval_video_option_only_with_the_plugin_and_no_heavy_import() -> None:
    code = (
        "import json, runpy, sys\n"
        "sys.argv = ['rlctl', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('rlcore', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(json.dumps(sorted(m for m in ('torch', 'tensordict', 'imageio') if m in sys.modules)), file=sys.stderr)\n"
    )
    env = {**os.environ, "RLCORE_PLUGINS": "rl-plugin-video"}
    for argv, shown in ((["eval", "--help"], True), (["--no-plugin", "video", "eval", "--help"], False)):
        done = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True, timeout=60, check=True)
        assert ("--video" in done.stdout) == shown, done.stdout
        assert json.loads(done.stderr.strip().splitlines()[-1]) == []


def test_torchrls_log_keys_exploration_type_and_suffix(run_dir: Path) -> None:
    from rlcore_testing import MemoryLogger

    memory = MemoryLogger()
    options = {
        "record_interval": 64,
        "episodes": 2,
        "exploration_type": "random",
        "log_keys": ["next.reward", "action"],
        "out_keys": {"action": "eval/actions"},
        "frame_skip": 2,
        "log_pbar": True,
        "video": True,
        "suffix": "random",
    }
    trainer, hooks = build_trainer(run_dir, {"evaluation": options}, total_frames=64, loggers=(memory,))
    trainer.train()
    evaluation = hooks["evaluation"].last
    assert memory.steps("r_evaluation") == [64] and memory.values["r_evaluation"][0][1] == 0.5  # 1 a step, over frame_skip 2
    assert memory.values["total_r_evaluation"] == memory.values["eval_random/episode_return"] == [(64, float(np.mean(evaluation.returns)))]
    actions = memory.histograms["eval/actions"][0][1]
    assert actions.shape == (sum(evaluation.lengths),) and set(actions.tolist()) <= {0.0, 1.0}  # one per step of both episodes
    assert trainer._pbar_values["r_evaluation"] == 0.5
    assert evaluation.video == run_dir / "videos" / "eval_random_000000064.mp4"


def test_another_policy_an_env_instance_and_no_trainer() -> None:
    from tensordict.nn import InteractionType, interaction_type

    loss = TinyLoss()
    modes: list[Any] = []

    def policy(td: Any) -> Any:
        modes.append(interaction_type())
        return loss.policy(td)

    env = make_env(1)
    hook = rlcore.get_plugin_manager(only=["rl-plugin-video"]).factory("hooks", "evaluation")(
        episodes=2, policy=policy, env=env, exploration_type=InteractionType.MODE, log_keys=[("next", "reward")]
    )
    evaluation = hook.run(None)  # the options name the policy and the env: no trainer needed
    assert len(evaluation.returns) == 2 and set(modes) == {InteractionType.MODE}
    assert evaluation.values == {"r_evaluation": 1.0, "total_r_evaluation": float(np.mean(evaluation.returns))}
    env.step(env.action_space.sample())  # an instance is the caller's: left open
    env.close()
    unknown = r"^hooks\.evaluation\.log_keys: 'next\.done' is not a key of the evaluation's steps \(valid choices: next\.reward, "
    with pytest.raises(rlcore.ConfigError, match=unknown):
        rlcore.get_plugin_manager(only=["rl-plugin-video"]).factory("hooks", "evaluation")(
            episodes=1, policy=loss.policy, env=ENV_ID, log_keys=["next.done"]
        ).run(None)
