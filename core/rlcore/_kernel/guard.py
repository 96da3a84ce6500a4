"""Loggers with deadlines: each logger's calls run in a thread of its own, so that a backend that does not
answer (a network logger whose server is gone) never stalls training."""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from .errors import error_line
from .logger import Logger

#: The default deadline of a logger's set-up and of each of its writes, in seconds.
DEFAULT_TIMEOUT = 10.0

_STOP = object()


class GuardedLogger(Logger):
    """A logger whose calls are queued to a worker thread and must each end within ``timeout`` seconds.

    The trainer never waits for a write: it queues it. It waits, at most ``timeout`` seconds, only
    where it must: for the logger's set-up, before a checkpoint (so that what was logged before it is
    written before it), and when the run ends. A logger whose call raises, or runs past its deadline,
    is reported once by the trainer and dropped; what it had not written is lost, the run goes on.
    Attributes the guard does not have are the wrapped logger's.

    :param logger: the logger, or a function that creates it (called in the worker thread).
    :param name: its name, for messages.
    :param timeout: the deadline of its set-up and of each call, in seconds.
    """

    def __init__(self, logger: Logger | Callable[[], Logger], name: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.name = name
        self.timeout = timeout
        self.logger: Logger | None = logger if isinstance(logger, Logger) else None
        self._calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._busy_since: float | None = None
        self._error: BaseException | None = None
        self._late = False  # a wait() ran past the deadline: calls were left unwritten
        self._abandoned = False  # dropped: the worker runs nothing more and ends
        self._closed = False  # closed: the worker has ended, and a call after it writes nothing
        self._thread = threading.Thread(target=self._work, name=f"rlcore-logger-{name}", daemon=True)
        self._thread.start()
        if not isinstance(logger, Logger):
            self._calls.put((partial(self._create, logger), None))

    # ------------------------------------------------------------------ the worker
    def _create(self, make: Callable[[], Logger]) -> None:
        self.logger = make()

    def _work(self) -> None:
        while True:
            call, done = self._calls.get()
            if call is _STOP or self._abandoned:
                return
            if self._error is None:
                self._busy_since = time.monotonic()
                try:
                    call()
                except BaseException as err:  # reported by the trainer, which drops the logger
                    self._error = err
                finally:
                    self._busy_since = None
            if done is not None:
                done.set()

    def _submit(self, method: str, *args: Any, **kwargs: Any) -> None:
        if not self._closed:
            self._calls.put((lambda: getattr(self.logger, method)(*args, **kwargs), None))

    # ------------------------------------------------------------------ health
    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every call queued so far has run; ``False`` if that takes more than ``timeout`` (default: the deadline).
        Once closed, there is nothing to wait for."""
        if self._closed:
            return True
        done = threading.Event()
        self._calls.put((lambda: None, done))
        finished = done.wait(self.timeout if timeout is None else timeout)
        self._late = self._late or not finished
        return finished

    def problem(self) -> str | None:
        """Why the logger must be dropped (its call raised or has run past the deadline, or a backlog of calls did), or ``None``."""
        if self._error is not None:
            return f"failed: {error_line(self._error)}"
        started = self._busy_since
        if started is not None and time.monotonic() - started > self.timeout:
            return f"did not answer within {self.timeout:g} s"
        if self._late:  # each call in time, but together past the deadline
            return f"did not write what it was given within {self.timeout:g} s"
        return None

    def abandon(self) -> None:
        """Give the logger up (it was dropped): its worker runs none of the queued calls and ends once its current one returns."""
        self._abandoned = True
        self._calls.put((_STOP, None))

    def __getattr__(self, name: str) -> Any:
        logger = self.__dict__.get("logger")
        if logger is None:
            raise AttributeError(name)
        return getattr(logger, name)

    # ------------------------------------------------------------------ the Logger interface
    @property
    def supports_video(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.logger, "supports_video", False))

    @property
    def exp_name(self) -> str:  # type: ignore[override]
        return self.logger.exp_name if self.logger is not None else self.name

    def log_scalar(self, name: str, value: float, step: int) -> None:
        self._submit("log_scalar", name, value, step)

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        self._submit("log_scalars", dict(values), step)

    def log_hparams(self, params: Mapping[str, Any]) -> None:
        self._submit("log_hparams", dict(params))

    def log_video(self, name: str, video: Any, step: int, fps: int = 30) -> None:
        self._submit("log_video", name, video, step, fps=fps)

    def log_histogram(self, name: str, values: Any, step: int) -> None:
        self._submit("log_histogram", name, values, step)

    def resume(self, step: int) -> None:
        self._submit("resume", step)

    def flush(self) -> None:
        self._submit("flush")

    def close(self) -> None:
        """Close the logger (waiting for it at most the deadline), then end the worker.

        Called while an exception propagates (the trainer closes its loggers in a ``finally``
        block), the logger's ``close`` runs in that exception's context too, as it would in the
        calling thread: backends read ``sys.exc_info()`` to mark a failed or killed run.
        """
        if self._closed:
            return
        error = sys.exc_info()[1]
        self._calls.put((partial(self._close_within, error), None))
        self.wait()
        self._calls.put((_STOP, None))
        self._closed = True

    def _close_within(self, error: BaseException | None) -> None:
        if self.logger is None:
            return
        if error is None:
            self.logger.close()
            return
        traceback = error.__traceback__
        try:
            raise error
        except BaseException:
            self.logger.close()
        finally:
            error.__traceback__ = traceback

    def __repr__(self) -> str:
        return f"GuardedLogger({self.logger!r}, timeout={self.timeout:g})"
