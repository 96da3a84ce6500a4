"""The ``ray`` collector: envs stepped by Ray actors, batches streamed to the trainer, in sync or async mode."""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import ray
import torch
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError
from tensordict import TensorDict, TensorDictBase

from rlcore import ConfigError, hookimpl, load_env_states

from ._cluster import Session
from ._worker import CollectorWorker, from_arrays, to_array

#: a worker's batch: its batch as arrays (``to_arrays``), episode returns, episode lengths, weight version, wrapper states
Result = tuple[TensorDict, np.ndarray, np.ndarray, int, dict[str, Any]]


class WorkerFailure(Exception):
    """A worker's process died (``ray.exceptions.RayActorError``) while it was asked for something."""


class RayCollector:
    """Collects from ``num_workers`` Ray actors (a :class:`rlcore.CollectorProtocol`); built by :func:`rl_plugin_ray.ray_collector`.

    Worker ``w`` runs ``env.num_envs / num_workers`` envs; seeded with ``seed``, its env ``i`` gets
    ``seed + w * env.num_envs / num_workers + i``, so that the envs of all workers are those of one
    process with ``env.num_envs`` envs, and its policy samples from ``seed + w * env.num_envs / num_workers``.

    - ``sync``: each batch asks every worker for ``frames_per_batch / num_workers`` frames and
      concatenates them along the env dimension: ``[env.num_envs, frames_per_batch / env.num_envs]``.
      The workers wait while the trainer optimises: the batch is collected with the current weights.
    - ``async``: every worker collects batches of ``frames_per_batch`` frames without end; the trainer
      takes the first that is ready (``[env.num_envs / num_workers, ...]``), and that worker starts its
      next one when the trainer asks for the next batch, after the new weights were sent. A batch may
      have been collected with older weights: its policy lag (the trainer's weight version minus the
      batch's) is logged as ``collector/policy_lag``.

    Weights are versioned: the trainer's version goes up with each batch whose optimisation changed
    them, and :meth:`update_policy_weights_` sends the policy's ``state_dict`` (one object in Ray's
    store for all workers) stamped with it. Workers that are not sent new weights (``update_weights:
    false``, an ``update_weights`` hook's interval) act with older ones: the lag says how much older. The collector is a plugin
    of the run (rl-core registers a collector with hook implementations): at ``rl_setup`` it sends the
    trainer's weights (those of a resumed checkpoint too), at ``rl_post_steps`` (last) the new ones
    when the batch was optimised and ``update_weights`` is on, and it logs ``collector/policy_lag``,
    ``collector/utd_ratio`` (frames the loss saw per frame collected, TorchRL's update-to-data
    ratio) and ``collector/worker_failures``.

    A worker whose process dies is replaced by a new one (fresh envs, seeded apart from every earlier
    worker, the current weights); what it was collecting is discarded, so that no frame is counted
    twice or trained on twice, and a warning says so, once per failure. An exception raised inside a
    worker (the env failed) fails the run with that exception.
    """

    def __init__(
        self,
        env: Any,
        policy: Any,
        frames_per_batch: int,
        *,
        device: Any,
        make_env: Callable[[int], Any],
        num_workers: int,
        mode: str,
        address: str | None,
        num_cpus: int | None,
        num_cpus_per_worker: float,
        update_weights: bool,
        max_worker_failures: int,
        timeout: float,
    ) -> None:
        self.env, self.policy, self.make_env = env, policy, make_env
        self.frames_per_batch, self.num_workers, self.mode = frames_per_batch, num_workers, mode
        self.device = torch.device(device)
        self.num_envs = env.num_envs
        self.envs_per_worker = env.num_envs // num_workers
        self.worker_frames = frames_per_batch // num_workers if mode == "sync" else frames_per_batch
        self.update_weights, self.max_worker_failures, self.timeout = update_weights, max_worker_failures, timeout
        #: ``(returns, lengths)`` of the episodes that ended in the last batch (rewards unscaled)
        self.finished_episodes: tuple[np.ndarray, np.ndarray] = (np.empty(0), np.empty(0, dtype=np.int64))
        #: the trainer's weight version: batches whose optimisation changed the weights (sent or not)
        self.version = 0
        #: the policy lag of the last batch: weight versions between the batch's policy and the trainer's
        self.policy_lag = 0
        #: workers that died and were replaced
        self.failures = 0
        self.trained_frames = 0
        self._seed: int | None = None
        self._generation = [0] * num_workers  # replacements of each worker so far
        self._pending: dict[int, Any] = {}  # async: worker -> its running collection
        self._consumed: int | None = None  # async: the worker whose batch was taken last
        self._trainer: Any = None
        self._pushed_at: int | None = None
        self._optimised = False  # whether this batch's optimisation changed the weights yet
        self._weights_ref: Any = None
        self.session = Session.open(address, num_cpus)
        try:
            need, have = num_workers * num_cpus_per_worker, self.session.cpus()
            if need > have:
                raise ConfigError(
                    f"collector.num_workers: {num_workers} workers x {num_cpus_per_worker:g} CPU need {need:g} CPUs; the Ray cluster has {have:g} "
                    "(lower collector.num_cpus_per_worker, or raise collector.num_cpus of a local cluster)"
                )
            self._actor = ray.remote(num_cpus=num_cpus_per_worker, max_restarts=0, max_task_retries=0)(CollectorWorker)
            cpu_policy = copy.deepcopy(policy).to("cpu")
            self._policy_ref = ray.put(cpu_policy)  # one pickled copy for every worker (and replacement)
            self.workers = [self._start() for _ in range(num_workers)]
            self._wait_started(range(num_workers))
        except BaseException:
            self.shutdown()
            raise

    # ------------------------------------------------------------------ workers
    def _start(self) -> Any:
        return self._actor.remote(self.make_env, self._policy_ref, self.envs_per_worker, self.worker_frames)

    def _wait_started(self, indices: Any) -> None:
        """Wait until the workers ``indices`` have built their envs.

        :raises RuntimeError: when one cannot start (its error) or they take longer than ``timeout``.
        """
        refs = [self.workers[i].pid.remote() for i in indices]
        try:
            ray.get(refs, timeout=self.timeout)
        except GetTimeoutError:
            raise RuntimeError(f"the Ray workers did not start within collector.timeout={self.timeout:g} s") from None
        except RayActorError as err:
            raise RuntimeError(f"a Ray worker could not start: {_cause(err)}") from None

    def _worker_seed(self, index: int) -> int | None:
        if self._seed is None:
            return None
        return self._seed + index * self.envs_per_worker + self._generation[index] * self.num_envs

    def _replace(self, index: int, error: BaseException) -> None:
        """Start a new worker ``index`` in place of one that died; a warning counts the death (a text of its own each time:
        Python shows a repeated warning once)."""
        self.failures += 1
        if self.failures > self.max_worker_failures:
            raise RuntimeError(
                f"{self.failures} Ray workers died (collector.max_worker_failures={self.max_worker_failures}); the last: {_cause(error)}"
            )
        warnings.warn(
            f"ray collector: worker {index} died ({_cause(error)}); it is replaced and its unfinished batch discarded "
            f"(failure {self.failures} of collector.max_worker_failures={self.max_worker_failures})",
            stacklevel=2,
        )
        with contextlib.suppress(Exception):
            ray.kill(self.workers[index], no_restart=True)
        self._generation[index] += 1
        self.workers[index] = self._start()
        self._wait_started([index])
        seed = self._worker_seed(index)
        if seed is not None:
            self.workers[index].set_seed.remote(seed)
        if self._weights_ref is not None:
            self.workers[index].set_weights.remote(self._weights_ref, self.version)

    def _get(self, index: int, ref: Any) -> Any:
        """The value of ``ref``, a call to worker ``index``; a worker's own exception is raised as it is."""
        try:
            return ray.get(ref, timeout=self.timeout)
        except GetTimeoutError:
            raise TimeoutError(f"Ray worker {index} did not answer within collector.timeout={self.timeout:g} s") from None
        except RayActorError as err:
            raise WorkerFailure(str(err)) from err
        except RayTaskError as err:
            raise err.as_instanceof_cause() from None

    def _first_ready(self, pending: dict[int, Any]) -> int:
        """The worker of ``pending`` whose call finished first."""
        ready, _ = ray.wait(list(pending.values()), num_returns=1, timeout=self.timeout)
        if not ready:
            raise TimeoutError(f"no batch from the Ray workers within collector.timeout={self.timeout:g} s")
        return next(i for i, ref in pending.items() if ref == ready[0])

    def _collect(self, index: int) -> Any:
        return self.workers[index].collect.remote()

    def _result(self, index: int, ref: Any) -> Result:
        """Worker ``index``'s batch, the TensorDict rebuilt."""
        arrays, returns, lengths, version, wrappers = self._get(index, ref)
        return from_arrays(*arrays), returns, lengths, version, wrappers

    def worker_pids(self) -> list[int]:
        """The process ids of the workers (a test kills one)."""
        return [int(self._get(i, worker.pid.remote())) for i, worker in enumerate(self.workers)]

    # ------------------------------------------------------------------ the protocol
    def set_seed(self, seed: int) -> None:
        """Seed every worker's envs and sampling (see the class); replacements get seeds of their own."""
        self._seed = seed
        for index, worker in enumerate(self.workers):
            worker.set_seed.remote(self._worker_seed(index))

    def __iter__(self) -> Iterator[TensorDictBase]:
        while True:
            yield self._next_sync() if self.mode == "sync" else self._next_async()

    def _next_sync(self) -> TensorDictBase:
        pending = {index: self._collect(index) for index in range(self.num_workers)}
        results: dict[int, Result] = {}
        while pending:
            index = self._first_ready(pending)
            try:
                results[index] = self._result(index, pending.pop(index))
            except WorkerFailure as failure:
                self._replace(index, failure.__cause__ or failure)
                pending[index] = self._collect(index)
        ordered = [results[index] for index in range(self.num_workers)]
        batch: TensorDictBase = torch.cat([result[0] for result in ordered], dim=0)  # type: ignore[assignment]
        return self._deliver(batch, ordered)

    def _next_async(self) -> TensorDictBase:
        if not self._pending:
            self._pending = {index: self._collect(index) for index in range(self.num_workers)}
        elif self._consumed is not None:
            self._pending[self._consumed] = self._collect(self._consumed)  # with the weights sent since
        self._consumed = None
        while True:
            index = self._first_ready(self._pending)
            try:
                result = self._result(index, self._pending.pop(index))
            except WorkerFailure as failure:
                self._replace(index, failure.__cause__ or failure)
                self._pending[index] = self._collect(index)
                continue
            self._consumed = index
            return self._deliver(result[0], [result])

    def _deliver(self, batch: TensorDictBase, results: list[Result]) -> TensorDictBase:
        """Note the batch's episodes, policy lag and wrapper statistics; move it to the device."""
        self.finished_episodes = (
            np.concatenate([np.asarray(r[1], dtype=np.float64) for r in results]),
            np.concatenate([np.asarray(r[2], dtype=np.int64) for r in results]),
        )
        self.policy_lag = self.version - min(r[3] for r in results)
        if results[0][4]:
            load_env_states(self.env, results[0][4])  # the trainer's env (evaluation, checkpoints): worker 0's, or the last to deliver
        return batch if self.device.type == "cpu" else batch.to(self.device)

    def update_policy_weights_(self, policy_weights: Any = None) -> None:
        """Send the trainer's weights to every worker, stamped with their version (TorchRL's signature).

        :param policy_weights: a ``state_dict`` of the policy (a mapping or a TensorDict of its
            parameters and buffers); ``None``: the policy's own.
        """
        weights = self.policy.state_dict() if policy_weights is None else policy_weights
        if isinstance(weights, TensorDictBase):
            weights = weights.flatten_keys(".").to_dict()
        self._weights_ref = ray.put({key: to_array(value) for key, value in weights.items()})
        for worker in self.workers:
            worker.set_weights.remote(self._weights_ref, self.version)
        if self._trainer is not None:
            self._pushed_at = self._trainer.optim_steps

    def state_dict(self) -> dict[str, Any]:
        """Every worker's state (envs where they can be saved, observations, running episodes, RNG) and the counters.

        In async mode a worker answers after the batch it is collecting; that batch is still
        delivered in this run, and a run resumed from here starts after it.
        """
        refs = {index: worker.state_dict.remote() for index, worker in enumerate(self.workers)}
        states: list[Any] = []
        for index, ref in refs.items():
            try:
                states.append(self._get(index, ref))
            except WorkerFailure as failure:
                self._replace(index, failure.__cause__ or failure)
                if index in self._pending:  # async: what it was collecting is lost; its replacement starts anew
                    self._pending[index] = self._collect(index)
                states.append(None)  # it starts fresh episodes after a resume
        return {
            "workers": states,
            "version": self.version,
            "failures": self.failures,
            "trained_frames": self.trained_frames,
            "generation": list(self._generation),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`; a worker whose envs could not be saved starts fresh episodes (one warning).

        :raises ValueError: when the checkpoint holds another number of workers, or another collector's state.
        """
        if "workers" not in state:
            raise ValueError("collector.name: the checkpoint was written by another collector than ray")
        states = list(state["workers"])
        if len(states) != self.num_workers:
            raise ValueError(f"collector.num_workers: the checkpoint holds {len(states)} Ray workers' state, this run has {self.num_workers}")
        self.version, self.failures = int(state["version"]), int(state["failures"])
        self.trained_frames = int(state["trained_frames"])
        self._generation = [int(g) for g in state.get("generation", self._generation)]
        refs = {index: self.workers[index].load_state_dict.remote(s) for index, s in enumerate(states) if s is not None}
        restored = [self._get(index, ref) for index, ref in refs.items()]
        if len(restored) < self.num_workers or not all(restored):
            warnings.warn("the envs of some Ray workers were not saved; they start fresh episodes", stacklevel=2)

    def shutdown(self) -> None:
        """Close the workers' envs (briefly), end the workers, leave Ray (a local cluster stops), close the trainer's env."""
        workers, self.workers, self._pending = getattr(self, "workers", []), [], {}
        if workers:
            with contextlib.suppress(Exception):
                ray.get([worker.close.remote() for worker in workers], timeout=min(self.timeout, 10.0))
            for worker in workers:
                with contextlib.suppress(Exception):
                    ray.kill(worker, no_restart=True)
        session = getattr(self, "session", None)
        if session is not None:
            session.close()
        self.env.close()

    # ------------------------------------------------------------------ hooks of the run
    @hookimpl
    def rl_setup(self, trainer: Any) -> None:
        """Send the trainer's weights (those of a resumed checkpoint too) before the first batch."""
        self._trainer = trainer
        self.update_policy_weights_()

    @hookimpl
    def rl_post_loss(self, batch: TensorDictBase) -> None:
        self.trained_frames += batch.numel()

    @hookimpl
    def rl_pre_optim_steps(self) -> None:
        self._optimised = False

    @hookimpl
    def rl_post_optim(self) -> None:
        """The batch's first optimizer step makes the trainer's weights a version newer than what collected it."""
        if not self._optimised:
            self._optimised = True
            self.version += 1

    @hookimpl(trylast=True)
    def rl_post_steps(self, trainer: Any) -> None:
        """Send the new weights once the batch's optimisation steps are done (unless a hook sent them already)."""
        if self.update_weights and self._pushed_at != trainer.optim_steps:
            self.update_policy_weights_()

    @hookimpl
    def rl_pre_steps_log(self) -> dict[str, Any]:
        return {"collector/policy_lag": self.policy_lag, "collector/worker_failures": self.failures}

    @hookimpl
    def rl_post_steps_log(self, trainer: Any) -> dict[str, Any]:
        return {"collector/utd_ratio": self.trained_frames / max(trainer.collected_frames, 1)}

    def __repr__(self) -> str:
        return f"RayCollector(num_workers={self.num_workers}, mode={self.mode!r}, frames_per_batch={self.frames_per_batch})"


def _cause(error: BaseException) -> str:
    """One line about why a worker failed."""
    text = str(error).strip().splitlines()
    first = next((line.strip() for line in text if line.strip()), type(error).__name__)
    return first[:200]

