"""``BatchSubSampler``: sub-trajectories of ``[envs, time]`` batches that never cross an episode's end, as TorchRL draws them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
import torch
from hooklib_helpers import round_trip
from tensordict import TensorDict

import rlcore
from rl_plugin_hooks import BatchSubSampler
from rlcore_testing import HookRecorder

#: episodes end (done) after these steps of each env's row of 10 steps: env 0 at 2 and 7, env 1 never, env 2 at 0 and 5
DONE = {0: (2, 7), 1: (), 2: (0, 5)}
#: the trajectories that gives: (env, first step, last step)
TRAJECTORIES = [(0, 0, 2), (0, 3, 7), (0, 8, 9), (1, 0, 9), (2, 0, 0), (2, 1, 5), (2, 6, 9)]


def _batch() -> TensorDict:
    """A batch ``[3 envs, 10 steps]`` whose ``step`` key says where each entry came from (``10 * env + t``)."""
    done = torch.zeros(3, 10, 1, dtype=torch.bool)
    for env, ends in DONE.items():
        for t in ends:
            done[env, t] = True
    step = torch.arange(30).reshape(3, 10)
    return TensorDict({"step": step, "observation": step.float().unsqueeze(-1).expand(3, 10, 4), "next": {"done": done}}, [3, 10])


def _trajectory_of(step: int) -> tuple[int, int, int]:
    env, t = divmod(step, 10)
    return next(traj for traj in TRAJECTORIES if traj[0] == env and traj[1] <= t <= traj[2])


def test_windows_stay_inside_one_trajectory_and_cover_every_start_torchrl_draws() -> None:
    torch.manual_seed(0)
    hook = BatchSubSampler(batch_size=12, sub_traj_len=4, min_sub_traj_len=3)
    batch = _batch()
    starts: Counter[int] = Counter()
    for _ in range(300):
        sub = hook(batch)
        # the shortest trajectory has 1 step: sub_traj_len is cut down to it, but not below min_sub_traj_len
        assert sub.batch_size == torch.Size([4, 3])
        assert sub["observation"].shape == (4, 3, 4) and torch.equal(sub["observation"][..., 0], sub["step"].float())
        for window in sub["step"].tolist():
            assert window == list(range(window[0], window[0] + 3))  # consecutive steps of one env
            assert len({_trajectory_of(s) for s in window}) == 1  # never across an episode's end
            starts[window[0]] += 1
    # TorchRL's draw: a trajectory at least 3 steps long, uniformly, then a start int(u * (length - 3)), u in [0, 1)
    # trajectories 0-2 (3 steps) start at 0; 3-7 (5) at 3 or 4; 1's row (10) at 10..16; 21-25 (5) at 21, 22; 26-29 (4) at 26
    assert set(starts) == {0, 3, 4, 10, 11, 12, 13, 14, 15, 16, 21, 22, 26}


def test_full_length_windows_of_rows_without_episode_ends() -> None:
    hook = BatchSubSampler(batch_size=20)  # sub_traj_len=0: the whole time dimension
    batch = _batch()
    batch["next", "done"][:] = False
    sub = hook(batch)
    assert sub.batch_size == torch.Size([2, 10])
    assert all(row == list(range(row[0], row[0] + 10)) and row[0] % 10 == 0 for row in sub["step"].tolist())


def test_torchrls_padded_trajectories_with_their_mask() -> None:
    torch.manual_seed(0)
    mask = torch.tensor([[True] * 6 + [False] * 4, [True] * 10, [True] * 3 + [False] * 7])
    batch = TensorDict({"step": torch.arange(30).reshape(3, 10), "collector": {"mask": mask}}, [3, 10])
    for _ in range(50):
        sub = BatchSubSampler(batch_size=8, sub_traj_len=4)(batch)  # cut down to the shortest, 3 steps
        assert sub.batch_size == torch.Size([2, 3]) and bool(sub["collector", "mask"].all())


def test_one_dimension_and_impossible_sizes() -> None:
    flat = TensorDict({"step": torch.arange(30)}, [30])
    sub = BatchSubSampler(batch_size=7)(flat)
    assert sub.batch_size == torch.Size([7]) and len(set(sub["step"].tolist())) == 7
    with pytest.raises(RuntimeError, match="Resulting batch size is zero"):
        BatchSubSampler(batch_size=2, sub_traj_len=4, min_sub_traj_len=4)(_batch())
    with pytest.raises(ValueError, match="no trajectory of the batch is 11 steps long"):
        BatchSubSampler(batch_size=64, min_sub_traj_len=11)(_batch())


def test_in_a_real_run_at_process_optim_batch(rl_make_trainer: Callable[..., rlcore.Trainer], rl_hook_recorder: HookRecorder) -> None:
    trainer = rl_make_trainer(total_frames=256)
    trainer.register_op("process_optim_batch", BatchSubSampler(batch_size=16, sub_traj_len=4, min_sub_traj_len=2))  # as an op
    rl_hook_recorder.register(trainer)
    trainer.train()
    calls = rl_hook_recorder.of("process_optim_batch")
    assert len(calls) == 16 and all("op BatchSubSampler" in call.plugins for call in calls)
    for call in calls:
        sub, batch = call.result, call["batch"]
        assert sub.ndim == 2 and sub.shape[1] >= 2 and sub.numel() <= 16
        assert not bool(sub["next", "done"][:, :-1].any())  # an episode may end only at a window's last step
        for window in sub["observation"]:  # each window is consecutive steps of one env of the batch
            env = next(e for e in range(batch.shape[0]) if any(torch.equal(o, window[0]) for o in batch["observation"][e]))
            t = next(t for t in range(batch.shape[1]) if torch.equal(batch["observation"][env, t], window[0]))
            assert torch.equal(batch["observation"][env, t : t + len(window)], window)
    _, resumed, _ = round_trip(rl_make_trainer, lambda: BatchSubSampler(16, 4), "batch_subsampler")
    assert resumed.state_dict() == {}  # its random draws come from torch's generator, which the trainer checkpoints
