"""Recurrent PPO (``algo.recurrent``): the LSTM's state carried through collection, kept in the batch, replayed
exactly along the sequences the loss trains on, resumed bit for bit, and refused where it cannot go."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import rlcore
from rlcore_testing import assert_state_equal, kill_and_resume, last_checkpoint

MASKED = ["env.wrappers.mask_observation.keep=[0, 2]", "env.num_envs=4", "collector.frames_per_batch=128"]


def _trainer(tmp_path: Path, *overrides: str) -> rlcore.Trainer:
    config = rlcore.load_config(algo={"name": "ppo"}, overrides=[*MASKED, "trainer.seed=5", "loggers.console=null", "trainer.progress_bar=false", *overrides])
    return rlcore.build_trainer(config, run_dir=tmp_path / "run")


def test_the_state_is_handed_on_through_collection_and_restarted_at_episode_starts(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, "algo.recurrent={hidden_size: 16}")
    try:
        first, second = trainer.collector.collect(), trainer.collector.collect()
    finally:
        trainer.shutdown()
    assert first["recurrent_state_h"].shape == (4, 32, 1, 16) and first["next", "recurrent_state_c"].shape == (4, 32, 1, 16)
    for batch in (first, second):
        h, handed, is_init = batch["recurrent_state_h"], batch["next", "recurrent_state_h"], batch["is_init"].squeeze(-1)
        assert is_init.any() and not is_init.all()  # (episodes of the untrained policy end inside a batch)
        assert (h[is_init] == 0).all()  # an episode's first step begins from zeros
        go_on = ~is_init[:, 1:]
        torch.testing.assert_close(h[:, 1:][go_on], handed[:, :-1][go_on], rtol=0, atol=0)  # the rest from the step before
    assert first["is_init"][:, 0].all()
    continued = ~second["is_init"][:, 0, 0]  # across batches too
    torch.testing.assert_close(second["recurrent_state_h"][continued, 0], first["next", "recurrent_state_h"][continued, -1], rtol=0, atol=0)


def test_the_sequences_replay_the_collection_exactly(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, "algo.recurrent={hidden_size: 16, seq_len: 8}", "algo.minibatches=4")
    try:
        batch = trainer.collector.collect()
    finally:
        trainer.shutdown()
    loss = trainer.loss_module
    progress = SimpleNamespace(collected_frames=128, batch_frames=128, total_frames=1024)
    sequences = loss.rl_batch_process(progress, batch)
    assert sequences.shape == (16, 8)  # 4 envs x 32 steps, cut into sequences of 8 steps
    with torch.no_grad():
        log_prob, _, value = loss.policy.evaluate(sequences)
    # the LSTM run again along each sequence, from the state its first step kept, gives what collection gave
    torch.testing.assert_close(log_prob, sequences["sample_log_prob"], rtol=0, atol=1e-6)
    torch.testing.assert_close(value, sequences["state_value"], rtol=0, atol=1e-6)
    minibatch = loss.rl_process_optim_batch(SimpleNamespace(optim_step_in_batch=0), sequences)
    assert minibatch.shape[0] == 4 and minibatch["is_init"].shape == (4, 8, 1)
    losses = loss(minibatch)
    assert losses["kl_approx"].abs() < 1e-6 and losses["clip_fraction"] == 0  # the ratio is 1 before the first step


def test_a_recurrent_policy_reads_dict_observations_through_its_encoder(tmp_path: Path) -> None:
    import rlcore_testing.envs  # noqa: F401  (registers DictBandit)

    dict_env = ["env.id=rlcore_testing.envs:DictBandit-v0", "env.wrappers.mask_observation=null"]
    trainer = _trainer(tmp_path, *dict_env, "algo.recurrent={hidden_size: 8, seq_len: 8}", "trainer.total_frames=256")
    trainer.train()
    assert type(trainer.loss_module.policy.encoder).__name__ == "MultiInputEncoder" and trainer.optim_steps > 0


def test_a_sequence_length_that_does_not_fit_the_batch_is_one_line(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path, "algo.recurrent={seq_len: 5}", "trainer.total_frames=256")
    message = r"^algo.recurrent.seq_len: 5 must divide each env's 32 steps of a batch and leave at least algo.minibatches=1"
    with pytest.raises(rlcore.ConfigError, match=message):
        trainer.train()


def test_a_critic_encoder_of_its_own_is_refused_with_the_one_lstm() -> None:
    from rl_plugin_nets import MLPEncoder
    from rl_plugin_pg._policies import ActorCritic

    encoders = {"encoder": MLPEncoder((4,), (8,)), "critic_encoder": MLPEncoder((4,), (8,))}
    with pytest.raises(rlcore.ConfigError, match=r"^algo.share_encoder: false gives the critic an encoder of its own, which a recurrent policy's"):
        ActorCritic((4,), 2, kind="categorical", lstm_hidden_size=8, **encoders)


def test_a_recurrent_policy_learns_the_masked_task_it_is_given(tmp_path: Path) -> None:
    """Short, so only a sanity check: the learning itself is benchmarks/recurrent_ppo.py's."""
    trainer = _trainer(tmp_path, "algo.recurrent={hidden_size: 32}", "trainer.total_frames=4096", "algo.epochs=4")
    trainer.train()
    assert trainer.optim_steps == 4 * 32
    policy = trainer.loss_module.policy
    assert policy.lstm is not None and policy.lstm.weight_hh_l0.grad is not None  # the LSTM learned through BPTT


@pytest.mark.slow
def test_a_killed_recurrent_run_resumes_bit_identically(tmp_path: Path) -> None:
    frames = 3072
    args = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--seed", "3", "--frames", str(frames), *(a for o in MASKED for a in ("--set", o)),
            "--set", "algo.recurrent={hidden_size: 16, seq_len: 8}", "--set", "trainer.save_trainer_interval=256",
            "--set", "checkpoint.keep_last=20", "--set", "loggers.console=null"]  # fmt: skip
    plugins = {"RLCORE_PLUGINS": "rl-plugin-pg,rl-plugin-envs,rl-plugin-nets"}
    runs = kill_and_resume(tmp_path, args, kill_after=256 * random.randint(2, 8), env=plugins, delay=0.3)
    (path, whole), (_, resumed) = last_checkpoint(runs.whole), last_checkpoint(runs.resumed)
    assert path.name.startswith(f"ckpt-{frames:012d}")
    assert whole["collector"]["carried"]["recurrent_state_h"].shape == (4, 1, 16)  # the state running into the next batch
    for part in ("loss_module", "optimizer", "collector"):
        assert_state_equal(whole[part], resumed[part], part)
    whole_metrics, resumed_metrics = runs.metrics()
    assert resumed_metrics == whole_metrics
