"""Each hook in a real short run at its hook point, with TorchRL's arguments, its state round-tripped through a checkpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from hooklib_helpers import round_trip

import rlcore
from rl_plugin_hooks import ClearCudaCache, CountFramesLog, LogScalar, RewardNormalizer, SelectKeys, UpdateWeights
from rlcore_testing import HookRecorder, MemoryLogger

MakeTrainer = Callable[..., rlcore.Trainer]


def _ran_at(recorder: HookRecorder, point: str) -> list[Any]:
    """The calls of ``point`` in which the ops registered there took part (named after what registered them)."""
    calls = recorder.of(point)
    assert calls and all(any(p.startswith(("hooks.", "op ")) for p in call.plugins) for call in calls), point
    return calls


def test_select_keys_keeps_only_its_keys_at_batch_process(rl_make_trainer: MakeTrainer, rl_hook_recorder: HookRecorder) -> None:
    keys = ["observation", "action", ("next", "reward"), "next.done"]
    trainer = rl_make_trainer(hooks={"select_keys": SelectKeys(keys)})
    rl_hook_recorder.register(trainer)
    trainer.train()
    for call in _ran_at(rl_hook_recorder, "batch_process"):
        assert "sample_log_prob" in call["batch"].keys() and ("next", "terminated") in call["batch"].keys(True)
        assert set(call.result.keys(True, True)) == {"observation", "action", ("next", "reward"), ("next", "done")}
    with pytest.raises(rlcore.ConfigError, match=r"^hooks\.select_keys\.keys: expected a list"):
        SelectKeys("observation")  # type: ignore[arg-type]  # TorchRL refuses one string too
    _, resumed, _ = round_trip(rl_make_trainer, lambda: SelectKeys(keys), "select_keys")
    assert resumed.state_dict() == {}


def test_log_scalar_logs_the_mean_of_any_key_before_optimisation(rl_make_trainer: MakeTrainer, rl_hook_recorder: HookRecorder) -> None:
    logger = MemoryLogger()
    hooks = {"log_reward": LogScalar(log_pbar=True), "log_obs": LogScalar("obs_mean", False, "observation")}
    trainer = rl_make_trainer(hooks=hooks, loggers=[logger])
    rl_hook_recorder.register(trainer)
    trainer.train()
    calls = _ran_at(rl_hook_recorder, "pre_steps_log")
    assert logger.values["r_training"] == [(32 * (i + 1), 1.0) for i in range(4)]  # CartPole pays 1 a step
    expected = [pytest.approx(call["batch"]["observation"].mean().item(), rel=1e-6) for call in calls]
    assert [value for _, value in logger.values["obs_mean"]] == expected
    assert hooks["log_reward"](calls[0]["batch"]) == {"r_training": 1.0, "log_pbar": True}  # TorchRL's op result
    round_trip(rl_make_trainer, LogScalar, "log_reward")


def test_count_frames_log_counts_frame_skip_frames_and_goes_on_after_a_resume(rl_make_trainer: MakeTrainer) -> None:
    logger = MemoryLogger()
    first, resumed, trainer = round_trip(rl_make_trainer, lambda: CountFramesLog(frame_skip=4), "count_frames_log", loggers=[logger])
    assert first.frame_count == resumed.frame_count == 2 * 32 * 4
    trainer.train()
    assert resumed.frame_count == 4 * 32 * 4
    assert [value for _, value in logger.values["n_frames"]] == [128.0, 256.0, 384.0, 512.0]


def test_reward_normalizer_statistics_against_a_hand_computation(rl_make_trainer: MakeTrainer, rl_hook_recorder: HookRecorder) -> None:
    normalizer = RewardNormalizer(decay=0.9, scale=2.0)
    trainer = rl_make_trainer()
    generator = torch.Generator().manual_seed(1)

    def varied_rewards(batch: Any) -> None:  # CartPole pays 1 a step: give the statistics something to measure
        batch["next", "reward"] = torch.randn(batch["next", "reward"].shape, generator=generator) * 3 + 1

    trainer.register_op("batch_process", varied_rewards)
    normalizer.register(trainer)
    rl_hook_recorder.register(trainer)
    trainer.train()

    total = ssq = count = 0.0
    means, stds = [], []
    for call in _ran_at(rl_hook_recorder, "batch_process"):
        reward = call.result["next", "reward"].double()
        total, ssq, count = 0.9 * total + reward.sum().item(), 0.9 * ssq + reward.pow(2).sum().item(), 0.9 * count + reward.numel()
        means.append(total / count)
        stds.append(max((ssq - total**2 / count) / (count - 1), torch.finfo(torch.float32).eps) ** 0.5)
    stats = normalizer.stats
    assert (stats["sum"].item(), stats["ssq"].item(), stats["count"]) == pytest.approx((total, ssq, count), rel=1e-5)
    assert (stats["mean"].item(), stats["std"].item()) == pytest.approx((means[-1], stds[-1]), rel=1e-5)
    # every optimisation step sees its batch normalised with the statistics of that batch; the batch itself is kept
    optim_calls = _ran_at(rl_hook_recorder, "process_optim_batch")
    batches = rl_hook_recorder.of("batch_process")
    for step, call in enumerate(optim_calls):
        mean, std = means[step // 2], stds[step // 2]
        raw = batches[step // 2].result["next", "reward"]
        assert torch.allclose(call.result["next", "reward"], (raw - mean) / std * 2.0, atol=1e-5)
        assert torch.equal(call["batch"]["next", "reward"], raw)

    first, resumed, _ = round_trip(rl_make_trainer, lambda: RewardNormalizer(decay=0.9), "reward_normalizer")
    assert resumed.stats["count"] == first.stats["count"] == pytest.approx(32 + 0.9 * 32)


def test_clear_cuda_cache_clears_every_interval_batches(rl_make_trainer: MakeTrainer, rl_hook_recorder: HookRecorder, monkeypatch: pytest.MonkeyPatch) -> None:
    clears: list[int] = []
    trainer = rl_make_trainer(hooks={"clear_cuda_cache": ClearCudaCache(2)})
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: clears.append(trainer.batches))
    rl_hook_recorder.register(trainer)
    trainer.train()
    assert len(_ran_at(rl_hook_recorder, "pre_optim_steps")) == 4
    assert clears == [1, 3]  # before the optimisation of the 2nd and the 4th batch
    _, resumed, _ = round_trip(rl_make_trainer, lambda: ClearCudaCache(interval=3), "clear_cuda_cache")
    assert resumed.state_dict() == {"count": 2, "clears": 0}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_clear_cuda_cache_releases_cached_cuda_memory() -> None:
    hook = ClearCudaCache(1)
    block = torch.empty(64 * 2**20, dtype=torch.uint8, device="cuda")
    del block  # freed, but kept by the caching allocator
    cached = torch.cuda.memory_reserved()
    hook()
    assert torch.cuda.memory_reserved() < cached and hook.clears == 1


def test_update_weights_pushes_every_interval_batches(rl_make_trainer: MakeTrainer, rl_hook_recorder: HookRecorder) -> None:
    trainer = rl_make_trainer()
    pushes: list[int] = []
    trainer.collector.update_policy_weights_ = lambda policy_weights=None: pushes.append(trainer.batches)  # type: ignore[method-assign]
    UpdateWeights(trainer.collector, 2).register(trainer)  # TorchRL's positional arguments
    rl_hook_recorder.register(trainer)
    trainer.train()
    assert len(_ran_at(rl_hook_recorder, "post_steps")) == 4
    assert pushes == [1, 3]  # after the optimisation of the 2nd and 4th batch
    # from the config, the collector is the trainer's; for rlcore.Collector the push is a no-op
    _, resumed, trainer = round_trip(rl_make_trainer, lambda: UpdateWeights(update_weights_interval=3), "update_weights")
    assert resumed.counter == 2 and resumed.collector is trainer.collector
    trainer.train()
    assert resumed.counter == 4
    with pytest.raises(rlcore.ConfigError, match=r"^hooks\.update_weights\.collector: no collector"):
        UpdateWeights(update_weights_interval=1)()
