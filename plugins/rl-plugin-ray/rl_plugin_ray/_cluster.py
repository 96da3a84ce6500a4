"""The Ray session of a run: a local cluster started for it, an existing cluster joined, or the caller's own session."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any

from rlcore import ConfigError, first_line

#: Seconds a cluster's address has to accept a connection before joining it is given up (Ray itself retries for minutes).
PROBE_SECONDS = 10.0


#: what a failed join adds when Ray's token authentication is not set up here (a cluster of Ray 2.59 or later may use it)
AUTH_HINT = "; if the cluster uses Ray's token authentication, set RAY_AUTH_MODE=token (and its token, RAY_AUTH_TOKEN) for rlctl too"


class Session:
    """This process's connection to Ray for one run.

    - Ray already initialised in this process (a notebook, a test module): the run uses that session
      and leaves it open.
    - ``address`` (or the environment's ``RAY_ADDRESS``): the run joins that cluster and disconnects at
      the end; the cluster stays.
    - Otherwise: a local cluster is started for the run (no dashboard) and shut down with it. A SIGINT or
      SIGTERM while it starts (on the main thread) is held until it has started, then delivered to the
      process's handler, and the cluster is stopped whole (see :func:`_signals_held`).

    :param owned: whether :meth:`close` disconnects (and, for a local cluster, stops it).
    :param address: the cluster joined, or ``None`` for a local one.
    """

    def __init__(self, owned: bool, address: str | None) -> None:
        self.owned, self.address = owned, address

    @classmethod
    def open(cls, address: str | None, num_cpus: int | None) -> Session:
        """Connect as the class says.

        :param address: ``collector.address``.
        :param num_cpus: ``collector.num_cpus``, for a local cluster.
        :raises ConfigError: when the cluster cannot be joined or started.
        """
        import ray

        if ray.is_initialized():
            return cls(owned=False, address=None)
        address = address or os.environ.get("RAY_ADDRESS") or None
        quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
        main_thread = threading.current_thread() is threading.main_thread()  # (elsewhere neither Ray nor Python sets handlers)
        handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)} if main_thread else {}
        answered = False  # something listens at the address: a failed join is Ray's
        try:
            if address is not None:
                _probe(address)
                answered = True
                ray.init(address=address, **quiet)
            else:
                with _signals_held(handlers) if handlers else contextlib.nullcontext():
                    ray.init(num_cpus=num_cpus, include_dashboard=False, **quiet)
        except (OSError, ValueError, RuntimeError) as err:  # (ConnectionError and TimeoutError among the first)
            where = f"cannot join the Ray cluster at {address!r}" if address else "cannot start a local Ray cluster"
            key = "collector.address" if address else "collector.num_cpus"
            hint = AUTH_HINT if answered and not os.environ.get("RAY_AUTH_MODE") else ""
            raise ConfigError(f"{key}: {where} ({first_line(err)}){hint}") from None
        except BaseException as stop:  # interrupted (a signal while it joins, or once a local cluster started): stop what it started
            ray.shutdown()
            # ray.init sets a SIGTERM handler of its own, sys.exit(15): the signal goes to the process's handler instead
            if not (isinstance(stop, SystemExit) and stop.code == signal.SIGTERM and handlers):
                raise
        else:
            return cls(owned=True, address=address)
        finally:  # Ray's core worker takes SIGTERM over (it aborts the process): the process's own handlers again
            for signum, handler in handlers.items():
                if handler is not None:  # (set again even when getsignal still names it: Ray's handler is set in C)
                    signal.signal(signum, handler)
        signal.raise_signal(signal.SIGTERM)
        raise KeyboardInterrupt  # (a handler that ignored it: the start was stopped all the same)

    def cpus(self) -> float:
        """The CPUs the cluster has now."""
        import ray

        return float(ray.cluster_resources().get("CPU", 0.0))

    def close(self) -> None:
        """Disconnect (and stop a local cluster) if this run connected; a caller's session stays."""
        import ray

        if self.owned and ray.is_initialized():
            ray.shutdown()
        self.owned = False


@contextlib.contextmanager
def _signals_held(handlers: dict[signal.Signals, Any]) -> Iterator[None]:
    """Hold the signals of ``handlers`` while Ray starts a local cluster, then deliver them to those handlers.

    A ``ray.init`` cut short leaves the agents its raylet started running for good (``ray.shutdown`` does not
    know them yet). So the first signal is only noted, and delivered when the block is left: the cluster has
    started, and the caller's cleanup stops all of it. A second one is delivered at once. The handlers Ray
    sets meanwhile (``sys.exit`` on SIGTERM) are not set. (A ``pthread_sigmask`` would hold the signals too,
    but every process Ray starts would inherit it: its raylet and workers would never take a SIGTERM.)

    :param handlers: the process's handlers (``signal.getsignal``) of the signals to hold; main thread only.
    """
    handlers = {signum: handler for signum, handler in handlers.items() if handler is not None}  # (one set in C is left alone)
    held: list[int] = []
    set_handler = signal.signal

    def deliver() -> None:
        signal.signal = set_handler
        for signum, handler in handlers.items():
            set_handler(signum, handler)
        while held:
            signal.raise_signal(held.pop(0))  # the process's handler runs here (rlctl's raises KeyboardInterrupt)

    def hold(signum: int, _frame: Any) -> None:
        held.append(signum)
        if len(held) > 1:
            deliver()

    def keep(signum: int, handler: Any) -> Any:  # ``signal.signal`` meanwhile
        return hold if signum in handlers else set_handler(signum, handler)

    for signum in handlers:
        set_handler(signum, hold)
    signal.signal = keep  # type: ignore[assignment]
    try:
        yield
    finally:
        deliver()


def _probe(address: str) -> None:
    """Connect to ``host:port`` (or ``ray://host:port``) and hang up: an address where nothing answers fails in seconds.

    Ray's own forms without a port (``auto``, ``local``) are left to Ray.

    :raises OSError: when nothing accepts the connection within :data:`PROBE_SECONDS`.
    """
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if colon and port.isdigit():
        try:
            socket.create_connection((host, int(port)), timeout=PROBE_SECONDS).close()
        except OSError as err:
            raise OSError(f"nothing answers at {host}:{port}: {err.strerror or err}") from None
