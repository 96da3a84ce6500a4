"""SIGKILL at random moments, inside checkpoint writes too, with sync and async envs: every resume continues from
the newest complete checkpoint, and the run ends bit-identical to one never killed, each metric logged once.

4 kills in all here (one inside a checkpoint write, one between writes, per vectorization); ``benchmarks/fault_injection.py`` kills as often as asked.
"""

from __future__ import annotations

import concurrent.futures

import pytest
from fault_injection import BATCH, assert_same_run, kill_and_resume, start

pytestmark = pytest.mark.slow  # subprocesses, several processes, kills and resumes: the slow tier

pytest.importorskip("rl_plugin_pg")

FRAMES = 48 * BATCH
KILLS = 2  # per vectorization: one inside a checkpoint write, one after it (benchmarks/fault_injection.py kills 20 times)


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_killed_again_and_again_the_run_ends_as_if_never_killed(tmp_path, vectorization):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    reference = start(whole, FRAMES, vectorization, resume=False)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        series = pool.submit(kill_and_resume, killed, FRAMES, KILLS, vectorization, seed=hash(vectorization) % 1000)
        _, err = reference.communicate(timeout=280)
        done = series.result(timeout=280)
    assert reference.returncode == 0, err
    assert done.kills >= KILLS // 2, done  # the run may finish before the last kills
    assert done.inside_writes >= 1, done
    assert_same_run(whole, killed, FRAMES)
