"""A run's deterministic policy as one TorchScript or ONNX file, its preprocessing baked in, checked before it is called done.

What goes in the file: the vector-env wrappers' observation transforms, each as the ``torch`` module its
``observation_module()`` gives (rl-plugin-envs' normalisations do), then the policy acting
deterministically. The file's input is the observation of the run's vector env under those wrappers,
so what each env's own wrappers do (a frame stack, resizing, Atari preprocessing) is the input's shape;
its output is the action the run's env is stepped with. TorchScript traces the module; ONNX goes
through ``torch.export`` (``torch.onnx.export(dynamo=True)``), with the batch size left free.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium.vector import VectorObservationWrapper, VectorWrapper
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type
from torch import nn

from rlcore import ConfigError, base_env, env_layers, first_line, load_policy

#: the file formats, with their default file names
FORMATS = {"torchscript": "policy.pt", "onnx": "policy.onnx"}
#: how far the file's actions may be from the original's
TOLERANCE = 1e-5


class ExportedPolicy(nn.Module):
    """The run's observation transforms, then its policy, deterministic: ``observation -> action``.

    :param policy: the ``tensordict.nn`` policy (reads ``observation``, writes ``action``).
    :param transforms: the observation transforms, innermost wrapper's first.
    """

    def __init__(self, policy: nn.Module, transforms: list[nn.Module]) -> None:
        super().__init__()
        self.transforms = nn.ModuleList(transforms)
        self.policy = policy

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        if observation.is_floating_point():
            observation = observation.float()  # (as the collector hands observations to the policy)
        for transform in self.transforms:
            observation = transform(observation)
        inputs = TensorDict({"observation": observation}, batch_size=observation.shape[:1])
        with set_interaction_type(InteractionType.DETERMINISTIC):
            return self.policy(inputs)["action"]


def export_policy(
    run: str | Path,
    format: str = "torchscript",
    output: str | Path | None = None,
    *,
    checkpoint: str | Path | None = None,
    check: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Write the deterministic policy of a run (or of a checkpoint) to ``output``, and check its actions.

    :param run: a run directory, or a checkpoint in one.
    :param format: ``torchscript`` or ``onnx``.
    :param output: the file; default ``policy.pt`` or ``policy.onnx`` in the run directory.
    :param checkpoint: a checkpoint of the run, rather than its newest.
    :param check: observations of the run's env (``seed``) on which the file's actions must be the original's.
    :param seed: the seed of the env the observations come from.
    :return: the file, its format, the input's shape and dtype, the checkpoint, and the largest difference found.
    :raises ConfigError: for an unknown format, a wrapper or module that cannot go into the file, or a file
        whose actions differ from the original's (it is removed).
    """
    if format not in FORMATS:
        raise ConfigError(f"--format: unknown format {format!r} (valid choices: {', '.join(FORMATS)})")
    if check < 2:
        raise ConfigError(f"--check: at least 2 observations, got {check}")
    policy = load_policy(run, checkpoint=checkpoint, preprocess=False)
    name = type(policy.module).__name__
    state = [str(key) for key in getattr(policy.module, "in_keys", ["observation"]) if key != "observation"]
    if state:
        raise ConfigError(f"rlctl export: the policy ({name}) reads {', '.join(state)} besides the observation (a recurrent state), which the file cannot hold")
    entries = getattr(policy.observation_space, "spaces", None)
    if isinstance(entries, Mapping):
        raise ConfigError(f"rlctl export: the policy ({name}) reads a Dict observation ({', '.join(entries)}), and the file takes one tensor")
    path = Path(output) if output is not None else policy.run_dir / FORMATS[format]
    env = policy.make_env(1)
    try:
        exported = ExportedPolicy(policy.module, transforms(env)).eval()
        observations, actions = record(policy.module, env, check, seed)
    finally:
        env.close()
    example = torch.as_tensor(observations[:2])  # (not one: torch.export takes a size of 1 for a constant)
    try:
        run_file = (write_torchscript if format == "torchscript" else write_onnx)(exported, example, path)
    except ConfigError:
        raise
    except Exception as err:  # (tracing raises whatever the module's code raises)
        raise ConfigError(f"rlctl export: the policy ({name}) does not go into {format}: {first_line(err)}") from None
    difference = max(_difference(run_file(observations), actions), _difference(run_file(observations[:1]), actions[:1]))
    if not difference <= TOLERANCE:
        path.unlink(missing_ok=True)
        raise ConfigError(f"rlctl export: the {format} file's actions differ from the policy's by {difference:.3g} (tolerance {TOLERANCE:g}); no file written")
    return {
        "file": str(path),
        "format": format,
        "input": {"name": "observation", "shape": ["N", *observations.shape[1:]], "dtype": str(observations.dtype)},
        "output": {"name": "action", "shape": ["N", *actions.shape[1:]], "dtype": str(actions.dtype)},
        "checkpoint": str(policy.checkpoint),
        "frames": policy.frames,
        "checked_observations": len(observations),
        "max_difference": difference,
    }


def transforms(env: Any) -> list[nn.Module]:
    """The ``observation_module()`` of each vector-env wrapper of the run's env ``env`` (:meth:`rlcore.Policy.make_env`'s), innermost first.

    :raises ConfigError: naming a wrapper that changes observations and offers no module.
    """
    modules = []
    for layer in reversed(_vector_wrappers(env)):
        module = getattr(layer, "observation_module", None)
        if module is not None:
            modules.append(module())
        elif isinstance(layer, VectorObservationWrapper) or layer.single_observation_space != layer.env.single_observation_space:
            raise ConfigError(
                f"rlctl export: the wrapper {type(layer).__name__} changes observations and offers no observation_module() "
                "to bake into the file (valid: rl-plugin-envs' normalize_observation, fixed_normalize_observation)"
            )
    return modules


def _vector_wrappers(env: Any) -> list[Any]:
    """The vector-env wrappers around the run's vector env, outermost first."""
    base = base_env(env)
    wrappers: list[Any] = []
    for layer in env_layers(env):
        if layer is base:
            return wrappers
        wrappers.append(layer)
    return wrappers


class _Recorder(VectorWrapper):
    """Keeps the observations of the vector env under the wrappers: the exported file's input."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.last: Any = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self.last = np.array(obs, copy=True)
        return obs, info

    def step(self, actions: Any) -> tuple[Any, ...]:
        result = self.env.step(actions)
        self.last = np.array(result[0], copy=True)
        return result


@torch.no_grad()
def record(module: nn.Module, env: Any, steps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` observations of the run's one-env ``env`` (seeded) under its vector-env wrappers, and the policy
    ``module``'s deterministic actions on the wrapped ones: the run's env stepped by the run's policy, as an evaluation is.
    A recorder goes in under the wrappers of ``env``."""
    wrappers = _vector_wrappers(env)
    recorder = _Recorder(base_env(env))
    if wrappers:
        wrappers[-1].env = recorder
    else:
        env = recorder
    obs, _ = env.reset(seed=seed)
    observations, actions = [], []
    for _ in range(steps):
        observations.append(recorder.last)
        tensor = torch.as_tensor(obs)
        inputs = TensorDict({"observation": tensor.float() if tensor.is_floating_point() else tensor}, batch_size=[1])
        with set_interaction_type(InteractionType.DETERMINISTIC):
            action = module(inputs)["action"].numpy()
        actions.append(action)
        obs = env.step(action)[0]
    observations_array = np.concatenate(observations)
    if np.issubdtype(observations_array.dtype, np.floating):
        observations_array = observations_array.astype(np.float32)
    return observations_array, np.concatenate(actions)


def write_torchscript(module: ExportedPolicy, example: torch.Tensor, path: Path) -> Any:
    """Trace ``module`` to ``path``; return how the saved file acts (``torch.jit.load``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # (quiet: the shapes a trace takes for constants, which the parity check's two batch sizes test; and torch's
    # deprecation of TorchScript, still what a C++ program loads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        traced = torch.jit.trace(module, example, check_trace=False)
        torch.jit.save(traced, str(path))
        loaded = torch.jit.load(str(path))
    return lambda observations: loaded(torch.as_tensor(observations)).numpy()


def write_onnx(module: ExportedPolicy, example: torch.Tensor, path: Path) -> Any:
    """Export ``module`` to ``path`` through ``torch.export``, the batch size free; return how ``onnxruntime`` runs the file."""
    try:
        import onnxruntime
    except ImportError:
        raise ConfigError("--format onnx: needs onnx, onnxscript and onnxruntime (pip install 'rl-plugin-export[onnx]')") from None
    batch = torch.export.Dim("batch", min=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _quiet():
        torch.onnx.export(module, (example,), str(path), dynamo=True, input_names=["observation"], output_names=["action"], dynamic_shapes=({0: batch},))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return lambda observations: session.run(None, {"observation": np.asarray(observations)})[0]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No progress lines on stdout (``rlctl export`` prints JSON there), no warnings of the exporter's own libraries."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _difference(got: np.ndarray, expected: np.ndarray) -> float:
    if got.shape != expected.shape:
        return float("inf")
    return float(np.abs(got.astype(np.float64) - expected.astype(np.float64)).max(initial=0.0))


__all__ = ["FORMATS", "TOLERANCE", "ExportedPolicy", "export_policy", "record", "transforms"]
