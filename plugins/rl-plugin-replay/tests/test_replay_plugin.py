"""Discovery, the hooks by name in a config, clear errors for bad options, and a third party's loss using the buffer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import rl_plugin_replay
import rlcore

HERE = os.path.dirname(__file__)


def test_discovered_through_its_entry_point():
    info = {i.name: i for i in rlcore.describe_plugins(rlcore.get_plugin_manager())}["replay"]
    assert info.status == "ok" and info.distribution == "rl-plugin-replay"
    assert info.provides == {"hooks": ["replay_buffer", "target_updater"]}


def test_importing_the_plugin_does_not_import_torch():
    code = "import sys, rl_plugin_replay; rl_plugin_replay.rl_register_hooks(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sampler": "rank"}, "hooks.replay_buffer.sampler: unknown value 'rank' (valid choices: uniform, prioritized)"),
        ({"capacity": 0}, "hooks.replay_buffer.capacity"),
        ({"capasity": 10}, "unknown key hooks.replay_buffer.capasity"),
    ],
)
def test_bad_options_are_one_clear_line(options, message):
    with pytest.raises(rlcore.ConfigError) as err:  # as the kernel checks a config's hooks section
        rlcore.validate_options("hooks.replay_buffer", rl_plugin_replay.replay_buffer, options)
    assert message in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(rlcore.ConfigError, match=r"target_updater\.kind: unknown value 'polyak'"):
        rl_plugin_replay.target_updater(kind="polyak")  # the factory checks too, when called from Python
    with pytest.raises(rlcore.ConfigError, match=r"replay_buffer\.sampler: unknown value 'rank'"):
        rl_plugin_replay.replay_buffer(sampler="rank")
    with pytest.raises(rlcore.ConfigError, match=r"^hooks.replay_buffer.exclude_keys: 'observation' is part of the transitions every off-policy loss reads"):
        rl_plugin_replay.replay_buffer(exclude_keys=("pixels", "observation"))


THIRD_PARTY = textwrap.dedent(
    """
    import inspect, json, tempfile
    import rlcore, rl_plugin_toyq, torch

    info = {i.name: i for i in rlcore.describe_plugins(rlcore.get_plugin_manager())}["toyq"]
    config = rlcore.load_config(overrides=["algo.name=toyq", "trainer.total_frames=640", "trainer.seed=1",
                                           "trainer.progress_bar=false", "loggers.console=null"])
    trainer = rlcore.build_trainer(config, run_dir=tempfile.mkdtemp())
    loss = trainer.loss_module
    start = [t.clone() for t in loss.target_q.state_dict().values()]
    trainer.train()
    hook = trainer.modules["replay_buffer"]
    leaves = hook.replay_buffer.sampler.tree.leaves[: len(hook.replay_buffer)]
    print(json.dumps({
        "status": info.status, "provides": info.provides,
        "size": len(hook.replay_buffer), "distinct_priorities": len(set(leaves.tolist())),
        "optim_steps": trainer.optim_steps,
        "target_moved": any(not torch.equal(a, b) for a, b in zip(start, loss.target_q.state_dict().values())),
        "private_imports": "rl_plugin_replay._" in inspect.getsource(rl_plugin_toyq),
        "metrics": sorted({line.split(",")[1] for line in open(trainer.run_dir / "metrics.csv").read().splitlines()[1:]}),
    }))
    """
)


@pytest.mark.slow
def test_a_third_party_loss_uses_the_buffer_through_the_public_api(toyq_site):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(toyq_site), os.environ.get("PYTHONPATH", "")])}
    env.pop("RLCORE_PLUGINS", None)
    out = subprocess.run([sys.executable, "-c", THIRD_PARTY], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == "ok" and result["provides"] == {"algorithms": ["toyq"]}
    assert result["size"] == 500  # capacity 500, 640 frames collected
    assert result["distinct_priorities"] > 50  # priorities set from its TD errors, not all the initial maximum
    assert result["optim_steps"] == 4 * 9  # 10 batches of 64 frames: none before init_random_frames=128 were collected
    assert result["target_moved"] and not result["private_imports"]
    for name in ("loss/td", "train/buffer_size", "train/update_to_data", "train/beta", "perf/fps"):
        assert name in result["metrics"], name
