"""The ``ray`` collector on a real local Ray cluster (one per module, 2 CPUs): sync and async batches, the
policy lag and update-to-data ratio read back from metrics.csv, a worker killed mid-run (twice), an exact resume,
Ctrl-C, a signal while a local cluster starts, and bad options refused in one line before Ray starts."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import importlib.util
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import rlcore
from rlcore_testing import PluginConformance

ray = pytest.importorskip("ray")
pytest.importorskip("rl_plugin_pg")

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]  # Ray clusters: the slow tier

EPOCHS = 2


@pytest.fixture(scope="module")
def ray_address() -> Any:
    """One local Ray session for the module: the collectors of its runs use it (and leave it open)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def make_config(frames: int, hooks: dict[str, Any] | None = None, **collector: Any) -> dict[str, Any]:
    """PPO on CartPole, 4 envs over 2 workers, batches of 64 frames, a small network."""
    return rlcore.load_config(
        hooks=hooks or {},
        algo={"name": "ppo", "hidden_sizes": [16], "epochs": EPOCHS, "minibatches": 1},
        env={"id": "CartPole-v1", "num_envs": 4},
        collector={"name": "ray", "num_workers": 2, "frames_per_batch": 64, "num_cpus_per_worker": 0.5, "timeout": 240, **collector},
        trainer={"total_frames": frames, "seed": 7, "progress_bar": False, "save_trainer_interval": 128},
        checkpoint={"keep_last": 10},
        loggers={"console": None},
    )


def metrics(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    values: dict[str, list[tuple[int, float]]] = {}
    with open(run_dir / "metrics.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            values.setdefault(row["name"], []).append((int(row["frames"]), float(row["value"])))
    return values


class Batches:
    """Records each batch's shape and a digest of its observations (a batch delivered twice would repeat one)."""

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []
        self.digests: list[str] = []
        self.first: torch.Tensor | None = None

    @rlcore.hookimpl
    def rl_batch_process(self, batch: Any) -> None:
        self.shapes.append(tuple(batch.shape))
        self.digests.append(hashlib.sha1(batch["observation"].numpy().tobytes()).hexdigest())
        if self.first is None:
            self.first = batch["observation"][:, 0].clone()


def test_bad_options_are_refused_in_one_line_before_ray_starts(tmp_path: Path) -> None:
    cases = {
        "collector.num_workers=3": "collector.num_workers: 3 does not divide env.num_envs=4 (each worker runs env.num_envs / num_workers envs)",
        "collector.mode=fast": "collector.mode: unknown value 'fast' (valid choices: sync, async)",
        "collector.workers=2": "unknown key collector.workers (valid choices: name, frames_per_batch, num_workers, mode, address, num_cpus, "
        "num_cpus_per_worker, update_weights, max_worker_failures, timeout)",
        "collector.num_cpus_per_worker=0": "collector.num_cpus_per_worker: expected a number > 0, got 0",
    }
    for override, message in cases.items():
        with pytest.raises(rlcore.ConfigError) as info:
            rlcore.build_trainer(rlcore.load_config(overrides=[override], **_sections()), run_dir=tmp_path / "run")
        assert str(info.value) == message
        assert not (tmp_path / "run").exists()
    assert not ray.is_initialized()  # the checks come first


def test_an_address_where_no_cluster_answers_is_refused_in_one_line_not_after_minutes(tmp_path: Path) -> None:
    import socket

    with socket.socket() as closed:  # a port that was free a moment ago: nothing listens there
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    for address in [f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"]:
        with pytest.raises(rlcore.ConfigError) as info:
            rlcore.build_trainer(rlcore.load_config(overrides=[f"collector.address={address}"], **_sections()), run_dir=tmp_path / "run")
        assert str(info.value).startswith(f"collector.address: cannot join the Ray cluster at {address!r} (nothing answers at 127.0.0.1:{port}: ")
        assert not (tmp_path / "run").exists()
    assert not ray.is_initialized()


def _sections() -> dict[str, Any]:
    return {"algo": {"name": "ppo"}, "env": {"num_envs": 4}, "collector": {"name": "ray", "frames_per_batch": 64}}


def test_sync_batches_are_every_workers_share_and_a_resume_continues_exactly(ray_address: str, tmp_path: Path) -> None:
    run_a = tmp_path / "a"
    trainer = rlcore.build_trainer(make_config(256), run_dir=run_a)
    seen = Batches()
    trainer.register_plugin(seen, "batches")
    trainer.train()
    assert trainer.collected_frames == 256 and seen.shapes == [(4, 16)] * 4  # [env.num_envs, frames_per_batch / num_envs]
    assert seen.first is not None and len({tuple(row.tolist()) for row in seen.first}) == 4  # 4 envs, 4 seeds, 2 workers
    logged = metrics(run_a)
    assert [v for _, v in logged["collector/policy_lag"]] == [0.0] * 4  # sync: collected with the current weights
    assert [v for _, v in logged["collector/utd_ratio"]] == [float(EPOCHS)] * 4
    final = {k: v.clone() for k, v in trainer.loss_module.state_dict().items()}

    run_b = tmp_path / "b"  # the same run, stopped after its checkpoint at 128 frames and resumed
    shutil.copytree(run_a, run_b)
    for checkpoint in (run_b / "checkpoints").iterdir():
        if not checkpoint.name.startswith("ckpt-000000000128"):
            checkpoint.unlink()
    resumed = rlcore.build_trainer(rlcore.load_config(run_b / "config.yaml"), run_dir=run_b, resume=True)
    assert resumed.collected_frames == 128
    resumed.train()
    assert resumed.collected_frames == 256 and resumed.batches == 4
    for key, value in resumed.loss_module.state_dict().items():
        assert torch.equal(value, final[key]), key  # workers' envs, observations and RNGs were restored


def test_async_logs_lag_and_utd_and_a_worker_killed_twice_is_replaced_and_reported_twice(ray_address: str, tmp_path: Path) -> None:
    run = tmp_path / "run"
    hooks = {"update_weights": {}} if importlib.util.find_spec("rl_plugin_hooks") else {}  # TorchRL's UpdateWeights, if installed
    trainer = rlcore.build_trainer(make_config(64 * 8, hooks=hooks, mode="async"), run_dir=run)
    seen = Batches()
    trainer.register_plugin(seen, "batches")
    pids = trainer.collector.worker_pids()

    class Killer:
        killed = 0

        @rlcore.hookimpl
        def rl_post_steps(self, trainer: Any) -> None:
            # mid-run: worker 0 dies, whatever it is doing; then, once it was replaced, its replacement
            if trainer.batches == 2 or (self.killed == 1 and trainer.collector.failures == 1):
                os.kill(trainer.collector.worker_pids()[0] if self.killed else pids[0], signal.SIGKILL)
                self.killed += 1

    trainer.register_plugin(Killer(), "killer")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # as a run shows them: a text repeated at one place is shown once
        trainer.train()
    failures = [str(w.message) for w in caught if "ray collector" in str(w.message)]
    assert len(failures) == 2, failures  # one warning for each death
    for number, failure in enumerate(failures, start=1):
        assert failure.startswith("ray collector: worker 0 died"), failure
        assert failure.endswith(f"(failure {number} of collector.max_worker_failures=10)"), failure

    assert trainer.collected_frames == 512 and trainer.batches == 8  # exact: the dead worker's batch was never counted
    assert seen.shapes == [(2, 32)] * 8  # one worker's frames_per_batch frames
    assert len(set(seen.digests)) == 8  # and no batch was delivered twice
    logged = metrics(run)
    assert [frames for frames, _ in logged["collector/utd_ratio"]] == [64 * i for i in range(1, 9)]
    assert {v for _, v in logged["collector/utd_ratio"]} == {float(EPOCHS)}
    lags = [v for _, v in logged["collector/policy_lag"]]
    assert len(lags) == 8 and min(lags) >= 0 and max(lags) >= 1  # the other worker's batch was collected with older weights
    assert logged["collector/worker_failures"][-1][1] == 2.0
    assert trainer.collector.version == 8  # one version per optimised batch (the hook's and the collector's push are one send)


def test_the_lag_counts_the_batches_whose_weights_the_workers_were_not_sent(ray_address: str, tmp_path: Path) -> None:
    """Sync mode, weights sent every second batch (TorchRL's UpdateWeights), or never: the lag says how old they are."""
    pytest.importorskip("rl_plugin_hooks")
    expected = {2: [0.0, 1.0, 0.0, 1.0], None: [0.0, 1.0, 2.0, 3.0]}
    for interval, lags in expected.items():
        hooks = {"update_weights": {"update_weights_interval": interval}} if interval else {}
        run = tmp_path / f"every_{interval}"
        rlcore.build_trainer(make_config(256, hooks=hooks, update_weights=False), run_dir=run).train()
        assert [v for _, v in metrics(run)["collector/policy_lag"]] == lags, interval


def test_dqn_explores_on_the_trainers_clock(ray_address: str, tmp_path: Path) -> None:
    """An off-policy algorithm on workers: its exploration wrapper's clock goes to them with the weights."""
    pytest.importorskip("rl_plugin_dqn")
    config = rlcore.load_config(
        algo={"name": "dqn", "hidden_sizes": [16], "eps_init": 1.0, "eps_end": 0.0, "eps_annealing_frames": 128, "init_random_frames": 64},
        env={"id": "CartPole-v1", "num_envs": 4},
        collector={"name": "ray", "num_workers": 2, "frames_per_batch": 64, "num_cpus_per_worker": 0.5, "timeout": 240},
        trainer={"total_frames": 384, "seed": 7, "progress_bar": False, "optim_steps_per_batch": 2},
        hooks={"replay_buffer": {"capacity": 1000, "batch_size": 16}},
        loggers={"console": None},
    )
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    greedy: list[tuple[int, float]] = []

    class Greedy:
        @rlcore.hookimpl
        def rl_batch_process(self, trainer: Any, batch: Any) -> None:
            with torch.no_grad():  # the trainer's weights are those the batch was collected with (sync mode)
                best = trainer.loss_module.qnet(batch["observation"].reshape(-1, 4)).argmax(-1)
            greedy.append((trainer.collected_frames - 64, (best == batch["action"].reshape(-1)).float().mean().item()))

    trainer.register_plugin(Greedy(), "greedy")
    trainer.train()
    logged = metrics(tmp_path / "run")
    assert [v for _, v in logged["train/epsilon"]] == [max(1 - f / 128, 0.0) for f in range(64, 385, 64)]
    # from frame 128 on epsilon is 0 on the workers too: each batch is the Q-network's greedy actions
    assert [share for start, share in greedy if start >= 128] == [1.0] * 4
    assert min(share for start, share in greedy if start < 128) < 0.9  # before, it explored


def test_ctrl_c_checkpoints_and_exits_130(ray_address: str, tmp_path: Path) -> None:
    config = tmp_path / "ray.yaml"
    rlcore.save_config(make_config(10**8, address=ray_address, num_workers=1), config)  # joins the module's cluster: no start-up
    run = tmp_path / "run"
    process = subprocess.Popen(
        [sys.executable, "-m", "rlcore", "train", str(config), "--out", str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "RLCORE_TRACEBACK": "1"},
    )
    try:
        deadline = time.monotonic() + 150
        while not list((run / "checkpoints").glob("ckpt-*")) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.5)
        os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the whole process group
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "Error" not in err, err
    saved = sorted(p.name for p in (run / "checkpoints").glob("ckpt-*"))
    frames = int(err.strip().splitlines()[-1].split()[1])  # "rlctl: N frames, run directory ..."
    assert saved[-1] == f"ckpt-{frames:012d}.pt"


#: A process that, as rlctl does while a run is built, turns SIGINT/SIGTERM into a KeyboardInterrupt, and sends
#: itself the signal of argv[1] while ``Session.open`` starts a local cluster: once the raylet's agents run.
INTERRUPTED_START = """
import os, signal, sys, threading, time
import psutil
from rl_plugin_ray._cluster import Session

received, sent = [], []

def handler(signum, _frame):
    received.append(signum)
    raise KeyboardInterrupt

def send_once_the_agents_run():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if any("Agent" in child.name() for child in psutil.Process().children(recursive=True)):
                break
        except psutil.Error:
            pass
        time.sleep(0.05)
    sent.append(time.monotonic())
    os.kill(os.getpid(), int(sys.argv[1]))

for signum in (signal.SIGINT, signal.SIGTERM):
    signal.signal(signum, handler)
threading.Thread(target=send_once_the_agents_run, daemon=True).start()
try:
    Session.open(None, 1).close()
except KeyboardInterrupt:
    print(f"stopped while starting: {bool(sent)}", flush=True)
    sys.exit(128 + received[0])
print("started", flush=True)
"""


def test_a_signal_while_the_local_cluster_starts_leaves_no_ray_process_behind(tmp_path: Path) -> None:
    """Ctrl-C while Ray starts its local cluster (SIGTERM meets the same handler, as under rlctl)."""
    signum = signal.SIGINT
    psutil = pytest.importorskip("psutil")
    script = tmp_path / "interrupted_start.py"
    script.write_text(INTERRUPTED_START)
    ray_tmp = tempfile.mkdtemp(prefix="rt-")  # the session's files: short paths (Ray's sockets live there)

    def left() -> list[Any]:
        """The processes with a file, a working directory or an argument in the session's directory."""
        found = []
        for process in psutil.process_iter():
            try:
                files = [f.path for f in process.open_files()] + [process.cwd(), *process.cmdline()]
            except psutil.Error:
                continue
            if process.pid != os.getpid() and any(ray_tmp in f for f in files):
                found.append(process)
        return found

    try:
        done = subprocess.run(
            [sys.executable, str(script), str(int(signum))], capture_output=True, text=True, timeout=120, env={**os.environ, "RAY_TMPDIR": ray_tmp}
        )
        assert done.returncode == 128 + signum and "stopped while starting: True" in done.stdout, done.stdout + done.stderr
        deadline = time.monotonic() + 10
        while left() and time.monotonic() < deadline:
            time.sleep(0.5)
        survivors = left()
        assert not survivors, [f"{process.pid} {process.name()} (parent {process.ppid()})" for process in survivors]
    finally:
        for process in left():
            with contextlib.suppress(psutil.Error):
                process.kill()
        shutil.rmtree(ray_tmp, ignore_errors=True)


class TestRayPlugin(PluginConformance):
    """Found through its entry point, listed without importing torch or ray, blockable."""

    plugin = "ray"
    distribution = "rl-plugin-ray"
    provides = {"collectors": ["ray"]}
    hooks = ("rl_register_collectors",)
    heavy_modules = ("torch", "ray")
