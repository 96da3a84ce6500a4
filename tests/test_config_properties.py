"""Any value of any config key: the run either starts, or stops before anything is built with one line (exit 2).

Hypothesis draws a key of the kernel's sections, of a first-party algorithm, logger or hook, and a
value of any type, as a user would write it after ``--set KEY=``. Whatever it is, the config is
refused with a one-line :class:`rlcore.ConfigError` (under 300 characters as rlctl prints it) and no run folder, or the run is built and
trains its first batch; and never with more than 1 GiB of memory (a YAML alias bomb once spent it on an error message).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlcore
from rlcore._app.config import flatten

pytestmark = pytest.mark.slow  # subprocesses, several processes, kills and resumes: the slow tier

#: base runs (small, so that a batch is quick) and the keys drawn for them
BASES = {
    "ppo": ["collector.frames_per_batch=64", "env.num_envs=2"],
    "dqn": ["collector.frames_per_batch=64", "env.num_envs=2"],
    "sac": ["collector.frames_per_batch=16", "env.num_envs=1"],
}
#: options of first-party plugins that are off by default, drawn too
EXTRA = {
    "hooks.evaluation": {"record_interval": 64, "episodes": 1, "record_frames": 50, "video": False, "fps": 30, "skip": 1, "final": True, "seed": 0},
    "hooks.video_recorder": {"source": "auto", "key": "pixels", "fps": 30, "skip": 1, "max_frames": 10, "interval": 64, "max_envs": 2},
    "hooks.tensordict_recorder": {"interval": 0, "max_batches": 1, "keys": ["observation"]},
    "loggers.csv": {"filename": "metrics.csv"},
    "loggers.console": {"every": 100, "keys": ["perf/fps"]},
}
ALIAS_BOMB = "{" + ", ".join(  # about 400 bytes that expand to 9**9 (387 million) items
    f"{name}: &{name} [{', '.join([f'*{previous}' if previous else 'lol'] * 9)}]" for previous, name in zip(["", *"abcdefgh"], "abcdefghi")
) + "}"
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    # sizes up to a few thousand: a valid size is built and trains its first batch, and a batch of 1e30 frames never ends
    st.floats(min_value=-1e4, max_value=1e4, width=32),
    st.sampled_from([float("nan"), float("inf"), float("-inf")]),
    st.just(ALIAS_BOMB),
    st.sampled_from(["abc", "", "cpu", "sync", "../x", "/tmp", "1e3", "3e-4", "[1, 2]", "{a: 1}", "null", "CartPole-v1"]),
    st.text(max_size=6),
    st.lists(st.integers(-2, 300), max_size=3),
    st.dictionaries(st.sampled_from(["a", "render_mode", "every", "x"]), st.integers(-2, 5), max_size=2),
)
AVAILABLE = [name for name in BASES if importlib.util.find_spec(f"rl_plugin_{'pg' if name == 'ppo' else name}")]


def keys_of(algo: str) -> list[str]:
    config = rlcore.default_config(algo)
    keys = [k for k in flatten({s: v for s, v in config.items() if s != "plugins"}) if k != "algo.name"]
    return keys + [f"{entry}.{option}" for entry, options in EXTRA.items() for option in options]


KEYS = {algo: keys_of(algo) for algo in AVAILABLE}


class StopAfterOneBatch:
    @rlcore.hookimpl
    def rl_post_steps(self, trainer: rlcore.Trainer) -> None:
        trainer.stop()


MEMORY_BOUND = 1 << 30  # bytes a value may cost, over what the process held before


@contextlib.contextmanager
def peak_memory() -> Iterator[list[int]]:
    """The most resident memory this process gained over the block, sampled every 2 ms (``[bytes]`` once it ends)."""
    page, start, peak, done = os.sysconf("SC_PAGE_SIZE"), _resident(), [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.002):
            peak[0] = max(peak[0], _resident() * page - start * page)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1])


def as_typed(value: object) -> str:
    """The text a user would type after ``KEY=`` for ``value``."""
    if isinstance(value, str):
        return value
    return yaml.safe_dump(value, default_flow_style=True).removesuffix("\n...\n").strip()


@pytest.mark.skipif(not AVAILABLE, reason="no first-party algorithm installed")
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_value_of_any_key_starts_or_is_refused_in_one_line(data, tmp_path_factory):
    algo = data.draw(st.sampled_from(AVAILABLE), label="algo")
    key = data.draw(st.sampled_from(KEYS[algo]), label="key")
    value = as_typed(data.draw(VALUES, label="value"))
    section, _, rest = key.partition(".")
    enable = [f"{section}.{rest.split('.')[0]}={{}}"] if f"{section}.{rest.split('.')[0]}" in EXTRA else []
    overrides = [*BASES[algo], "loggers.console=null", "checkpoint.keep_last=1", *enable, f"{key}={value}"]
    run = tmp_path_factory.mktemp("prop") / "run"
    with peak_memory() as peak:
        starts_or_is_refused(algo, overrides, run)
    assert peak[0] < MEMORY_BOUND, f"{key}={value}: {peak[0] / MEMORY_BOUND:.1f} GiB"


def starts_or_is_refused(algo: str, overrides: list[str], run: Path) -> None:
    try:
        config = rlcore.load_config(algo={"name": algo}, overrides=overrides)
        trainer = rlcore.build_trainer(config, run_dir=run)
    except (rlcore.ConfigError, rlcore.PluginError) as err:
        message = str(err)
        assert message and "\n" not in message and len(f"rlctl: error: {message}") < 300, message
        assert not run.exists(), f"{overrides[-1]}: a refused run left {run}"
        return
    trainer.register_plugin(StopAfterOneBatch())
    try:
        trainer.train()
    except rlcore.ConfigError as err:  # a value only the running loop can judge (a batch key a hook needs)
        assert str(err) and "\n" not in str(err) and len(f"rlctl: error: {err}") < 300, str(err)
    assert trainer.batches <= 1
