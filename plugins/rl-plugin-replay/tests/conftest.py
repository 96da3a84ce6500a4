"""Fixtures of rl-plugin-replay's tests: transitions to store, and the third-party test plugin installed by pip."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

TOYQ = Path(__file__).parent / "plugins" / "rl-plugin-toyq"


def transitions(n: int, envs: int | None = None, obs_dim: int = 3, start: float = 0.0) -> TensorDict:
    """``n`` transitions (or a batch ``[envs, n]``) whose observation's first entry counts from ``start``."""
    shape = [n] if envs is None else [envs, n]
    count = torch.arange(n * (envs or 1), dtype=torch.float32).reshape(shape) + start
    obs = count.unsqueeze(-1).expand(*shape, obs_dim).clone()
    flags = torch.zeros(*shape, 1, dtype=torch.bool)
    return TensorDict(
        {
            "observation": obs,
            "action": torch.zeros(shape, dtype=torch.int64),
            "next": {
                "observation": obs + 1,
                "reward": count.unsqueeze(-1),
                "done": flags,
                "terminated": flags.clone(),
                "truncated": flags.clone(),
            },
        },
        batch_size=shape,
    )


@pytest.fixture
def make_transitions():
    return transitions


@pytest.fixture(scope="session")
def toyq_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test plugin ``rl-plugin-toyq`` installed by pip (``--target``), with its entry point."""
    site = tmp_path_factory.mktemp("toyq-site")
    build = tmp_path_factory.mktemp("toyq-build") / TOYQ.name
    subprocess.run(["cp", "-r", str(TOYQ), str(build)], check=True, timeout=30)  # no build/ or egg-info in the source tree
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(site), str(build)],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=120,
    )
    return site
