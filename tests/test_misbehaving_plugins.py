"""A plugin that misbehaves in a loop hook, in each of the ten: it raises, calls ``sys.exit``, never returns,
returns the wrong type or a number too large to log (``rl-plugin-hostile``'s ``hostile-loop``, installed as a
real distribution). Each run ends naming the plugin and the hook, with the right exit code, its last good
checkpoint and the metrics logged so far intact, and a resume continues from them.
"""

from __future__ import annotations

import csv
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from rlcore._app import cli
from rlcore.hookspecs import HOOK_POINTS
from rlcore_testing import run_rlctl

QUIET = ["--no-plugin", "broken", "--no-plugin", "badhook", "--no-plugin", "badsig"]  # the test plugins broken on purpose
TOY = [*QUIET, "train", "--algo", "toy", "--seed", "1", "--frames", "128", "--set", "loggers.console=null", "--set", "trainer.save_trainer_interval=64"]
PLUGIN = "plugin 'hostile-loop' (rl-plugin-hostile)"

HOOKS = [f"rl_{point}" for point in HOOK_POINTS]
DATA = ["rl_batch_process", "rl_process_optim_batch"]  # return a batch
LOGGING = ["rl_pre_steps_log", "rl_post_optim_log", "rl_post_steps_log"]  # return values to log
VALUED = [*DATA, *LOGGING, "rl_optimizer"]  # (the operation hooks' return values are not used)
WRONG = {
    "rl_batch_process": "returned a list; expected a TensorDictBase or None",
    "rl_process_optim_batch": "returned a dict; expected a TensorDictBase or None",
    "rl_pre_steps_log": "returned a str; expected a Mapping or None",
    "rl_post_optim_log": "returned a list; expected a Mapping or None",
    "rl_post_steps_log": "returned a str; expected a Mapping or None",
    "rl_optimizer": "returned a str; expected a Mapping or None",
}
ERRORS = {
    "raise": lambda hook: "ZeroDivisionError: the plugin divided by zero",
    "exit": lambda hook: "RuntimeError: it called sys.exit(0), which ends no run: raise an exception, or call trainer.stop()",
    "type": lambda hook: f"TypeError: {WRONG[hook]}",
    "huge": lambda hook: "ValueError: cannot log 'hostile/huge': 10000000000000000000... is too large for a float",
}
CASES = [
    *((how, hook) for how in ("raise", "exit") for hook in HOOKS),
    *(("type", hook) for hook in VALUED),
    *(("huge", hook) for hook in [*LOGGING, "rl_optimizer"]),
]


def frames_logged(run: Path) -> set[int]:
    with open(run / "metrics.csv", newline="") as handle:
        return {int(row["frames"]) for row in csv.DictReader(handle)}


def resumes(run: Path) -> None:
    """The run, resumed with the plugin behaving, continues from its last good checkpoint to the end."""
    done = run_rlctl(*TOY[: TOY.index("--frames")], "--resume", str(run), "--frames", "192")
    assert done.returncode == 0, done.stderr
    assert f"rlctl: resumed from {run / 'checkpoints' / 'ckpt-000000000064.pt'} at 64 frames" in done.stderr
    assert {64, 128, 192} <= frames_logged(run)


@pytest.mark.parametrize(("how", "hook"), CASES)
def test_a_plugin_failing_in_a_loop_hook_is_named_and_the_run_keeps_what_it_had(
    with_plugins: Path, tmp_path: Path, how: str, hook: str
) -> None:
    run = tmp_path / "run"
    done = run_rlctl(*TOY, "--out", str(run), env={"HOSTILE_LOOP": f"{how}@{hook}", "RLCORE_TRACEBACK": "0"})
    assert done.returncode == 1 and "Traceback" not in done.stderr and "a second line" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == f"rlctl: error: training failed: {PLUGIN} at {hook}: {ERRORS[how](hook)}"
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["ckpt-000000000064.pt"]
    assert 64 in frames_logged(run)
    resumes(run)


@pytest.mark.parametrize("hook", HOOKS)
def test_a_plugin_hanging_in_a_loop_hook_is_named_and_a_second_sigterm_stops_it(
    with_plugins: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hook: str
) -> None:
    """The first SIGTERM waits for the batch, which never ends, and the watchdog says where it is stuck; the second
    stops the run at once, names the hook and the checkpoint a resume continues from, and exits 143."""
    monkeypatch.setattr(cli, "STOPPING_SECONDS", 0.2)
    run = tmp_path / "run"
    sender = threading.Thread(target=_terminate_twice_when_hanging, args=(run / "hanging",), daemon=True)
    sender.start()
    done = run_rlctl(*TOY, "--out", str(run), env={"HOSTILE_LOOP": f"hang@{hook}", "RLCORE_TRACEBACK": "0"})
    sender.join(timeout=10)
    assert done.returncode == 143 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert f"rlctl: still running 0.2 s after the SIGTERM, in {PLUGIN} at {hook}; a second SIGTERM stops at once" in lines
    assert lines[-1] == (
        f"rlctl: SIGTERM again: stopped at once in {PLUGIN} at {hook}; "
        "the frames since its last checkpoint, ckpt-000000000064.pt, are lost (--resume continues from it)"
    )
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["ckpt-000000000064.pt"]
    assert 64 in frames_logged(run)
    resumes(run)


def _terminate_twice_when_hanging(hanging: Path, timeout: float = 60) -> None:
    """Send this process a SIGTERM once ``hanging`` exists, and a second one after the watchdog spoke, while it still
    exists (a run that stopped at the first is not signalled again)."""
    deadline = time.monotonic() + timeout
    while not hanging.exists():
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.6)
    if hanging.exists():
        os.kill(os.getpid(), signal.SIGTERM)


def test_every_loop_hook_is_exercised(with_plugins: Path) -> None:
    """The cases cover each hook point, and the plugin implements each."""
    import rl_plugin_hostile

    assert {hook for _, hook in CASES} == set(HOOKS)
    assert {name for name in vars(rl_plugin_hostile.misbehaves) if name.startswith("rl_")} == set(HOOKS)
    assert set(WRONG) == set(VALUED)
