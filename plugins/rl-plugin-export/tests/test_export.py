"""``rlctl export``: real runs of the first-party algorithms, exported to TorchScript and ONNX, read back by
``torch.jit.load`` and ``onnxruntime``, and compared with ``rlcore.load_policy`` on raw observations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import onnxruntime
import pytest
import torch

import rlcore
from rlcore_testing import run_rlctl

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parents[1] / "README.md"

#: name: (algorithm, env, wrappers, frames)
RUNS: dict[str, tuple[str, str, dict[str, Any], int]] = {
    "ppo-cartpole-stacked": ("ppo", "CartPole-v1", {"frame_stack": {"stack_size": 3}, "normalize_observation": {}}, 512),
    "ppo-pendulum": ("ppo", "Pendulum-v1", {"normalize_observation": {}}, 512),
    "sac-pendulum": ("sac", "Pendulum-v1", {"normalize_observation": {}}, 400),
    "dqn-minatar": ("dqn", "MinAtar/Breakout-v1", {}, 800),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("minatar")
    root = tmp_path_factory.mktemp("export")
    made = {}
    for name, (algo, env_id, wrappers, frames) in RUNS.items():
        config: dict[str, Any] = {
            "algo": {"name": algo, **({"init_random_frames": 200} if algo == "dqn" else {})},
            "env": {"id": env_id, "num_envs": 1, "wrappers": wrappers},
            "trainer": {"total_frames": frames, "seed": 2, "progress_bar": False},
            "loggers": {},
        }
        if algo == "ppo":
            config["collector"] = {"frames_per_batch": 256}
        rlcore.build_trainer(config, root / name).train()
        made[name] = root / name
    return made


def _export(run: Path, *args: str) -> dict[str, Any]:
    result = run_rlctl("export", str(run), *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _load(report: dict[str, Any]) -> Any:
    """How the file acts, read back by its own runtime alone."""
    if report["format"] == "torchscript":
        module = torch.jit.load(report["file"])
        return lambda obs: module(torch.as_tensor(obs)).numpy()
    session = onnxruntime.InferenceSession(report["file"], providers=["CPUExecutionProvider"])
    return lambda obs: session.run(None, {"observation": np.asarray(obs)})[0]


@pytest.mark.parametrize("format_", ["torchscript", "onnx"])
@pytest.mark.parametrize("name", list(RUNS))
def test_the_file_acts_as_the_run_s_policy(runs: dict[str, Path], name: str, format_: str, tmp_path: Path) -> None:
    output = tmp_path / f"policy.{format_}"
    report = _export(runs[name], "--format", format_, "-o", str(output))
    assert report["file"] == str(output) and output.stat().st_size > 0
    assert report["checked_observations"] == 1000 and report["max_difference"] <= 1e-5
    act = _load(report)
    with rlcore.load_policy(runs[name]) as policy:
        if name == "ppo-cartpole-stacked":
            assert report["input"]["shape"] == ["N", 3, 4]  # the frame stack is the input's shape; the normalisation is inside
            return
        # the file takes the env's own observations: its actions are predict's on raw observations
        env = gymnasium.make(RUNS[name][1])
        raw = np.stack([env.observation_space.sample() for _ in range(64)])
        env.close()
        expected, _ = policy.predict(raw)
        got = act(raw.astype(np.float32) if raw.dtype.kind == "f" else raw)
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
        if name != "dqn-minatar":
            assert np.ptp(got) > 1e-3  # (actions that differ, or the comparison proves little)


def test_the_default_file_is_in_the_run_directory(runs: dict[str, Path]) -> None:
    report = _export(runs["ppo-pendulum"])
    assert report["file"] == str(runs["ppo-pendulum"] / "policy.pt")
    assert report["input"] == {"name": "observation", "shape": ["N", 3], "dtype": "float32"}
    assert report["output"] == {"name": "action", "shape": ["N", 1], "dtype": "float32"}


def test_the_readme_acts_with_the_onnx_file_and_no_rl_core(runs: dict[str, Path], tmp_path: Path) -> None:
    _export(runs["sac-pendulum"], "--format", "onnx", "-o", str(tmp_path / "policy.onnx"))
    text = README.read_text()
    code = text.split("<!-- onnx-without-rlcore -->\n```python\n", 1)[1].split("```", 1)[0]
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('rlcore', 'torch', 'tensordict', 'torchrl') or name.startswith('rl_plugin'):\n"
        "            raise ImportError(f'{name} is blocked')\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    done = subprocess.run([sys.executable, "-c", blocker + code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    # the same episode, acted by rl-core's own policy on the raw observations
    with rlcore.load_policy(runs["sac-pendulum"]) as policy:
        env = gymnasium.make("Pendulum-v1")
        obs, _ = env.reset(seed=0)
        expected, over = 0.0, False
        while not over:
            obs, reward, terminated, truncated, _ = env.step(policy.predict(obs)[0])
            expected += float(reward)
            over = terminated or truncated
    assert float(done.stdout.split()[-1]) == pytest.approx(expected, abs=1e-2)


WRAPPERS = """
from gymnasium.spaces import Box
from gymnasium.vector import VectorWrapper


class Halve(VectorWrapper):
    \"\"\"Observations halved: a user's vector-env wrapper with no observation_module(). ``declare``: it says so in its space.\"\"\"

    def __init__(self, env, declare=True):
        super().__init__(env)
        if declare:
            space = env.single_observation_space
            self.single_observation_space = Box(space.low / 2, space.high / 2, space.shape, space.dtype)

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs / 2, info

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        return obs / 2, reward, terminated, truncated, info
"""


@pytest.mark.parametrize("declare", [True, False])
def test_a_wrapper_without_a_torch_transform_writes_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declare: bool) -> None:
    (tmp_path / "halving.py").write_text(WRAPPERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = {
        "algo": {"name": "ppo"},
        "env": {"id": "Pendulum-v1", "num_envs": 1, "wrappers": {"halving.Halve": {"declare": declare}, "normalize_observation": {}}},
        "trainer": {"total_frames": 256, "seed": 0, "progress_bar": False},
        "collector": {"frames_per_batch": 256},
        "loggers": {},
    }
    rlcore.build_trainer(config, tmp_path / "run").train()
    result = run_rlctl("export", str(tmp_path / "run"), env={"RLCORE_TRACEBACK": "0"})
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    if declare:  # named before anything is written
        assert line == (
            "rlctl: error: rlctl export: the wrapper Halve changes observations and offers no observation_module() "
            "to bake into the file (valid: rl-plugin-envs' normalize_observation, fixed_normalize_observation)"
        )
    else:  # caught by the parity check: the file's actions are not the policy's
        assert line.startswith("rlctl: error: rlctl export: the torchscript file's actions differ from the policy's by ")
        assert line.endswith("(tolerance 1e-05); no file written")
    assert not (tmp_path / "run" / "policy.pt").exists()
    # load_policy takes it: the wrapper itself prepares predict's observations
    with rlcore.load_policy(tmp_path / "run") as policy:
        assert policy.predict(np.zeros(3, dtype=np.float32))[0].shape == (1,)


def test_bad_arguments_are_one_line_errors(runs: dict[str, Path], tmp_path: Path) -> None:
    result = run_rlctl("export", str(runs["ppo-pendulum"]), "--format", "tflite", env={"RLCORE_TRACEBACK": "0"})
    assert result.returncode == 2 and "Invalid value for '--format'" in result.stderr
    result = run_rlctl("export", str(runs["ppo-pendulum"]), "--check", "1", env={"RLCORE_TRACEBACK": "0"})
    assert result.returncode == 2 and "Invalid value for '--check'" in result.stderr
    result = run_rlctl("export", str(tmp_path), env={"RLCORE_TRACEBACK": "0"})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"rlctl: error: {tmp_path / 'config.yaml'}: cannot read config file (No such file or directory)"]


@pytest.mark.parametrize(
    ("algo", "env_id", "what"),
    [
        ({"recurrent": {"hidden_size": 8}}, "CartPole-v1", "reads is_init, recurrent_state_h, recurrent_state_c besides the observation (a recurrent state), "
         "which the file cannot hold"),
        ({}, "rlcore_testing.envs:DictBandit-v0", "reads a Dict observation (flip, image), and the file takes one tensor"),
    ],
)  # fmt: skip
def test_what_the_file_cannot_hold_is_refused_in_one_line(tmp_path: Path, algo: dict[str, Any], env_id: str, what: str) -> None:
    import rlcore_testing.envs  # noqa: F401  (registers DictBandit)

    config = {
        "algo": {"name": "ppo", **algo},
        "env": {"id": env_id, "num_envs": 2},
        "collector": {"frames_per_batch": 64},
        "trainer": {"total_frames": 64, "progress_bar": False},
        "loggers": {},
    }
    rlcore.build_trainer(config, tmp_path / "run").train()
    result = run_rlctl("export", str(tmp_path / "run"), env={"RLCORE_TRACEBACK": "0"})
    assert result.returncode == 2 and not list((tmp_path / "run").glob("policy.*"))
    assert result.stderr.splitlines() == [f"rlctl: error: rlctl export: the policy (ActorCritic) {what}"]
