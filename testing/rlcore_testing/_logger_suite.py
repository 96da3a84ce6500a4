"""``LoggerConformance``: the :class:`rlcore.Logger` contract, as tests that any logger runs with its own factory."""

from __future__ import annotations

import math
import os
import signal
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import pytest

if TYPE_CHECKING:
    from rlcore import Logger

#: ``{name: [(step, value), ...]}`` in the order the backend keeps them
Scalars = dict[str, list[tuple[int, float]]]

#: a config's flattened keys, with every kind of value a config holds
HPARAMS: dict[str, Any] = {
    "algo.name": "ppo",
    "optim.lr": 3e-4,
    "trainer.total_frames": 100000,
    "algo.normalize_advantage": True,
    "algo.hidden_sizes": [64, 64],
    "trainer.seed": None,
    "env.kwargs": {},
}
#: how long the killed run of the durability test may take to log and flush (a backend's start-up included)
KILL_TIMEOUT = 120
#: a step beyond 32 bits: long runs count billions of frames
BIG_STEP = 5_000_000_000  # (2**32 is 4,294,967,296)


class LoggerConformance:
    """The :class:`rlcore.Logger` contract as tests: subclass it in a test module as ``TestMyLogger``.

    A subclass implements :meth:`make_logger` and, so that values are checked, :meth:`read_back`
    with the backend's own reader (TensorBoard's event reader, an MLflow client, the CSV file).
    :meth:`read_hparams` and :meth:`run_status` are optional. Setup that needs other fixtures goes in
    an autouse fixture of the subclass (it runs on the same instance as the test)::

        class TestMyLogger(LoggerConformance):
            resume_mode = "drop"

            def make_logger(self, log_dir):
                return MyLogger("run", log_dir)

            def read_back(self, logger):
                return read_my_files(logger.log_dir)

    Every value the suite logs is exactly representable in ``float32``, so it reads back equal.
    """

    #: What :meth:`read_back` of a logger that resumed at a checkpoint shows (see
    #: :meth:`rlcore.Logger.resume`): ``"drop"``, the values logged after the checkpoint are gone
    #: (one value per step and metric: CSV, TensorBoard); ``"append"``, the interrupted run goes on
    #: and keeps them beside the new ones (MLflow cannot delete points); ``"new_run"``, resume is a
    #: no-op and the resumed logger writes a run of its own.
    resume_mode: ClassVar[Literal["drop", "append", "new_run"]] = "drop"

    # ------------------------------------------------------------------ what a subclass provides
    def make_logger(self, log_dir: Path) -> Logger:
        """A new logger writing under ``log_dir``; called again with the same directory for a resumed run.

        :param log_dir: the run directory.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement make_logger(log_dir)")

    def read_back(self, logger: Logger) -> Scalars | None:
        """The scalars ``logger`` wrote, read back with the backend's own reader, after it was closed.

        :param logger: a closed logger from :meth:`make_logger`.
        :return: ``{name: [(step, value), ...]}``, or ``None`` when the backend has nothing to read
            (then the suite checks only that every call is accepted).
        """
        return None

    def read_hparams(self, logger: Logger) -> Mapping[str, Any] | None:
        """The hparams ``logger`` recorded, read back after it was closed; ``None`` when not readable.

        :param logger: a closed logger.
        """
        return None

    def run_status(self, logger: Logger) -> str | None:
        """How the backend recorded the end of the run: ``"finished"``, ``"failed"``, or ``None`` when it does not.

        :param logger: a logger closed after :meth:`rlcore.Logger.log_hparams` was called.
        """
        return None

    def read_back_killed(self, log_dir: Path) -> Scalars | None:
        """What a run killed after its logger's ``flush()`` left in ``log_dir``, read with the backend's reader.

        The default is :meth:`read_back` of a new logger made on ``log_dir``: right for a logger whose
        files are all in its ``log_dir``. Override it for one that writes elsewhere (a new MLflow logger
        starts a run of its own), and return ``None`` for a logger that keeps nothing outside the process.
        """
        logger = self.make_logger(log_dir)
        try:
            return self.read_back(logger)
        finally:
            logger.close()

    # ------------------------------------------------------------------ helpers
    def _assert_read_back(self, logger: Logger, expected: Scalars) -> None:
        """Assert that :meth:`read_back` holds ``expected`` for its names (without a reader, calls being accepted is the check)."""
        _assert_values(self.read_back(logger), expected, f"{type(logger).__name__} read back")

    # ------------------------------------------------------------------ the contract
    def test_scalars_read_back_at_their_steps(self, tmp_path: Path) -> None:
        """Scalars one by one and several per step, at their steps; flush and close twice, and flush after close."""
        from rlcore import Logger

        logger = self.make_logger(tmp_path / "run")
        assert isinstance(logger, Logger), f"{type(logger).__name__} is not an rlcore.Logger"
        assert isinstance(logger.supports_video, bool)
        logger.log_scalar("train/episode_return", 1.5, 128)
        logger.log_scalars({"train/episode_return": 2.5, "loss/objective": -0.25}, 256)
        logger.flush()
        logger.flush()
        logger.log_scalars({}, 300)  # nothing to log: nothing logged
        logger.log_scalar("loss/objective", 3, 384)  # an int is a number too
        logger.log_scalars({"perf/fps": 0.125}, BIG_STEP)
        logger.close()
        logger.close()
        logger.flush()  # after close: nothing to do, nothing raised
        expected = {
            "train/episode_return": [(128, 1.5), (256, 2.5)],
            "loss/objective": [(256, -0.25), (384, 3.0)],
            "perf/fps": [(BIG_STEP, 0.125)],
        }
        self._assert_read_back(logger, expected)

    def test_what_flush_wrote_outlives_a_kill(self, tmp_path: Path) -> None:
        """The durability contract: once ``flush()`` returned, what was logged is the backend's, even if the process is
        killed (SIGKILL) before ``close()``. The trainer flushes every logger before each checkpoint, so that a checkpoint
        never counts steps its logs lack."""
        if not hasattr(os, "fork"):
            pytest.skip("needs os.fork")
        log_dir = tmp_path / "run"
        expected = {"loss/objective": [(128, 0.5), (256, 0.25)], "train/episode_return": [(256, 2.0)]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # (fork with threads: the child runs no thread of ours)
            pid = os.fork()
        if pid == 0:  # the run that is killed: it logs, flushes and dies without closing
            try:
                logger = self.make_logger(log_dir)
                logger.log_scalar("loss/objective", 0.5, 128)
                logger.log_scalars({"loss/objective": 0.25, "train/episode_return": 2.0}, 256)
                logger.flush()
            finally:
                os.kill(os.getpid(), signal.SIGKILL)
        deadline = time.monotonic() + KILL_TIMEOUT
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if done[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"logging and flush() did not return within {KILL_TIMEOUT} s")
        _assert_values(self.read_back_killed(log_dir), expected, f"after flush() and a kill, {type(self).__name__} read back")

    def test_hparams_histograms_and_videos(self, tmp_path: Path) -> None:
        """Hparams of every config type are recorded; histograms and videos are accepted (or a documented no-op)."""
        import numpy as np
        import torch

        logger = self.make_logger(tmp_path / "run")
        logger.log_hparams(HPARAMS)
        logger.log_scalar("a", 1.0, 1)
        logger.log_histogram("policy/logits", torch.linspace(-1, 1, 100), 2)
        logger.log_histogram("policy/actions", np.arange(10), 2)
        video = np.zeros((4, 16, 16, 3), dtype=np.uint8)
        video[:, 4:12, 4:12] = np.arange(4, dtype=np.uint8)[:, None, None, None] * 60
        with warnings.catch_warnings():  # a logger without videos may say so, once
            warnings.simplefilter("ignore")
            logger.log_video("eval/video", video, step=3, fps=10)
        logger.log_scalar("a", 2.0, 4)
        logger.close()
        status = self.run_status(logger)
        assert status in (None, "finished"), f"a run closed normally is recorded as {status!r}"
        recorded = self.read_hparams(logger)
        if recorded is not None:
            missing = sorted(set(HPARAMS) - set(recorded))
            assert not missing, f"hparams not recorded: {missing}"
            for key, value in HPARAMS.items():
                assert _same_param(recorded[key], value), f"hparam {key}: recorded {recorded[key]!r} for {value!r}"
        self._assert_read_back(logger, {"a": [(1, 1.0), (4, 2.0)]})

    def test_close_while_an_exception_propagates(self, tmp_path: Path) -> None:
        """Closed in a ``finally`` block, as the trainer closes its loggers: what was logged stays, the run is marked failed."""
        logger = self.make_logger(tmp_path / "run")
        logger.log_hparams({"optim.lr": 0.5})
        logger.log_scalar("a", 1.0, 1)
        with pytest.raises(RuntimeError, match="diverged"):
            try:
                raise RuntimeError("diverged")
            finally:
                logger.close()
        status = self.run_status(logger)
        assert status in (None, "failed"), f"a run closed during an exception is recorded as {status!r}"
        self._assert_read_back(logger, {"a": [(1, 1.0)]})

    def test_close_after_a_signal_stopped_the_run(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A run stopped by SIGINT/SIGTERM (rlctl finishes its batch, checkpoints, then closes the loggers): marked killed."""
        from rlcore import Logger

        logger = self.make_logger(tmp_path / "run")
        logger.log_scalar("a", 1.0, 1)
        monkeypatch.setattr(Logger, "stopped_by_signal", True)  # what rlctl's signal handler sets
        logger.close()
        status = self.run_status(logger)
        assert status in (None, "killed"), f"a run stopped by a signal is recorded as {status!r}"
        self._assert_read_back(logger, {"a": [(1, 1.0)]})

    def test_resume_from_a_checkpoint(self, tmp_path: Path) -> None:
        """A new logger on the same run directory, told ``resume(3)``, after one that logged steps 1 to 5 (see :attr:`resume_mode`)."""
        interrupted = self.make_logger(tmp_path / "run")
        for step in (1, 2, 3, 4, 5):
            interrupted.log_scalars({"loss": float(step)}, step)
        interrupted.close()  # the checkpoint was taken at step 3: 4 and 5 are logged again
        resumed = self.make_logger(tmp_path / "run")
        resumed.resume(3)
        for step in (4, 5, 6):
            resumed.log_scalars({"loss": 10.0 * step}, step)
        resumed.close()
        old, new = [(s, float(s)) for s in (1, 2, 3, 4, 5)], [(s, 10.0 * s) for s in (4, 5, 6)]
        values = self.read_back(resumed)
        if values is None:
            return
        logged = [(int(step), float(value)) for step, value in values.get("loss", [])]
        if self.resume_mode == "drop":
            assert logged == old[:3] + new, f"resume(3) should drop steps 4 and 5 of the interrupted run: {logged}"
        elif self.resume_mode == "append":
            assert sorted(logged) == sorted(old + new), f"the interrupted run should go on: {logged}"
        else:
            assert logged == new, f"the resumed logger should write a run of its own: {logged}"


def _same_param(recorded: Any, value: Any) -> bool:
    """Whether a backend recorded ``value`` faithfully: equal, equal as text (MLflow keeps params as strings), or equal as a number."""
    if recorded == value or str(recorded) == str(value):
        return True
    numbers = (int, float)
    if isinstance(value, numbers) and not isinstance(value, bool) and isinstance(recorded, numbers) and not isinstance(recorded, bool):
        return math.isclose(float(recorded), float(value), rel_tol=1e-6)
    return False


def _assert_values(values: Scalars | None, expected: Scalars, what: str) -> None:
    """Assert that ``values`` (``None``: nothing to read back, no check) hold ``expected`` for its names."""
    if values is not None:
        found = {name: [(int(step), float(value)) for step, value in values.get(name, [])] for name in expected}
        assert found == expected, f"{what} {found}, expected {expected}"


__all__ = ["HPARAMS", "LoggerConformance", "Scalars"]

