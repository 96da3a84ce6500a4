"""Any Gymnasium id: ids registered by a package on import, Gymnasium's ``module:EnvId``, and one line for an unknown id."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rlcore
from rlcore_testing import run_rlctl


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, where no package that registers ids is imported yet."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_id", "module", "shape"),
    [
        ("ALE/Pong-v5", "ale_py", (210, 160, 3)),
        ("PongNoFrameskip-v4", "ale_py", (210, 160, 3)),  # an id of ale-py's without its namespace
        ("MinAtar/Breakout-v1", "minatar", (10, 10, 4)),
    ],
)
def test_an_id_registered_on_import_works_without_the_import(env_id: str, module: str, shape: tuple[int, ...]) -> None:
    pytest.importorskip(module)
    done = _python(
        "import sys, gymnasium, rlcore\n"
        f"assert {env_id!r} not in gymnasium.registry\n"
        f"env = rlcore.make_vector_env({env_id!r}, 2)\n"
        "print(env.single_observation_space.shape, 'async' if False else '')\n"
    )
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.split("\n")[0].strip() == str(shape)


def test_module_colon_id_and_an_unknown_id_from_the_command_line(tmp_path) -> None:
    env = rlcore.make_vector_env("gymnasium.envs.classic_control:CartPole-v1", 2, vectorization="async")
    assert env.single_observation_space.shape == (4,)
    env.close()
    pytest.importorskip("rl_plugin_pg")
    pytest.importorskip("ale_py")
    code, _, err = run_rlctl("train", "--algo", "ppo", "--env", "ALE/Pongg-v5", "--out", str(tmp_path / "run"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "unknown env 'ALE/Pongg-v5'" in err and "did you mean ALE/Pong-v5" in err
    code, _, err = run_rlctl("train", "--algo", "ppo", "--env", "Pong-v5", "--out", str(tmp_path / "run"))  # EnvPool's name of it
    assert code == 2 and "unknown env 'Pong-v5'" in err and "did you mean ALE/Pong-v5," in err  # the namespaced id first
    code, _, err = run_rlctl("train", "--algo", "ppo", "--env", "nosuchpackage:Thing-v0", "--out", str(tmp_path / "run"))
    expected = "rlctl: error: env.id: cannot import module 'nosuchpackage' of 'Thing-v0' (ModuleNotFoundError: No module named 'nosuchpackage')"
    assert code == 2 and err.strip() == expected
    assert not (tmp_path / "run").exists()


def test_mujoco_and_box2d_ids() -> None:
    pytest.importorskip("mujoco")
    pytest.importorskip("Box2D")
    for env_id, shape in [("HalfCheetah-v5", (17,)), ("LunarLander-v3", (8,))]:
        env = rlcore.make_vector_env(env_id, 1)
        assert env.single_observation_space.shape == shape
        env.close()


@pytest.mark.slow
def test_envs_render_off_screen_without_a_display() -> None:
    pytest.importorskip("mujoco")
    code = (
        "import os, rlcore\n"
        "env = rlcore.make_vector_env('HalfCheetah-v5', 1, kwargs={'render_mode': 'rgb_array'})\n"
        "env.reset(seed=0)\n"
        "frame = env.render()[0]\n"
        "print(frame.shape, int(frame.max()) > 0, os.environ['MUJOCO_GL'], os.environ['SDL_VIDEODRIVER'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "MUJOCO_GL", "SDL_VIDEODRIVER")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**env, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.split() == ["(480,", "480,", "3)", "True", "egl", "dummy"]
    assert "XDG_RUNTIME_DIR" not in done.stderr


@pytest.mark.slow
def test_module_colon_id_finds_a_module_of_the_working_directory_under_the_rlctl_script(tmp_path) -> None:
    pytest.importorskip("rl_plugin_pg")
    (tmp_path / "myenvs.py").write_text(
        'import gymnasium\ngymnasium.register("MyCart-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv", max_episode_steps=50)\n'
    )
    rlctl = Path(sys.executable).with_name("rlctl")  # the console script: its sys.path holds no working directory
    args = ["train", "--algo", "ppo", "--env", "myenvs:MyCart-v0", "--frames", "128", "--set", "collector.frames_per_batch=128", "--set", "env.num_envs=2"]
    done = subprocess.run([str(rlctl), *args, "--set", "env.vectorization=async", "--set", "loggers.console=null", "--out", "run"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    assert (tmp_path / "run" / "metrics.csv").read_text().count("train/episode_length") > 0
