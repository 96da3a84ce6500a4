"""Entry-point discovery, the registered factories, and the light top module."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import rlcore
from rlcore import TrainerHookBase

HOOKS = ["evaluation", "tensordict_recorder", "video_recorder"]


def test_entry_point_is_discovered() -> None:
    infos = {info.name: info for info in rlcore.describe_plugins(rlcore.get_plugin_manager(only=["rl-plugin-video"]))}
    video = infos["video"]
    assert video.status == "ok"
    assert video.distribution == "rl-plugin-video"
    assert video.provides["hooks"] == HOOKS
    assert video.hooks == ["rl_register_commands", "rl_register_hooks"]  # commands: ``rlctl eval --video``


def test_factories_show_their_options_and_build_hooks() -> None:
    pm = rlcore.get_plugin_manager(only=["rl-plugin-video"])
    expected = {
        "video_recorder": {
            *("source", "key", "fps", "skip", "max_frames", "interval", "dump_on_episode_end", "max_envs", "name", "directory"),
        },
        "tensordict_recorder": {"interval", "max_batches", "keys", "directory"},
        "evaluation": {
            *("record_interval", "episodes", "record_frames", "video", "fps", "skip", "max_frames", "final", "seed", "env", "directory"),
            *("exploration_type", "log_keys", "out_keys", "suffix", "log_pbar", "frame_skip"),  # TorchRL's LogValidationReward's
        },  # (its policy only from Python: the factory takes it, a config cannot)
    }
    for name in HOOKS:
        factory = pm.factory("hooks", name)
        parameters = inspect.signature(factory).parameters
        assert set(parameters) == expected[name]
        assert all(p.default is not inspect.Parameter.empty and p.annotation is not inspect.Parameter.empty for p in parameters.values())
        hook = factory()
        assert isinstance(hook, TrainerHookBase)
        assert hook.state_dict()


def test_listing_plugins_imports_no_heavy_library() -> None:
    code = (
        "import json, sys, rlcore\n"
        "infos = rlcore.describe_plugins(rlcore.get_plugin_manager())\n"
        "video = next(i for i in infos if i.name == 'video')\n"
        "heavy = sorted(m for m in ('torch', 'tensordict', 'imageio', 'gymnasium', 'numpy') if m in sys.modules)\n"
        "print(json.dumps({'status': video.status, 'hooks': video.provides['hooks'], 'heavy': heavy}))\n"
    )
    env = {**os.environ, "RLCORE_PLUGINS": "rl-plugin-video"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=60).stdout
    result = json.loads(out.strip().splitlines()[-1])
    assert result == {"status": "ok", "hooks": HOOKS, "heavy": []}


def test_frame_pipeline_is_public_and_lazy() -> None:
    code = (
        "import json, sys, rl_plugin_video\n"
        "names = ['to_rgb', 'tile', 'to_video_frame', 'to_rgb_video', 'pad_even', 'write_mp4', 'read_video', 'VideoRecorder']\n"
        "before = sorted(m for m in ('numpy', 'torch', 'imageio') if m in sys.modules)\n"
        "missing = [n for n in names if n not in rl_plugin_video.__all__ or not callable(getattr(rl_plugin_video, n))]\n"
        "print(json.dumps({'before': before, 'missing': missing}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert json.loads(out.strip().splitlines()[-1]) == {"before": [], "missing": []}
