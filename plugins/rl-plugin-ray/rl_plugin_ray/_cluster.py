"""The Ray session of a run: a local cluster started for it, an existing cluster joined, or the caller's own session."""

from __future__ import annotations

import logging
import os
from typing import Any

from rlcore import ConfigError, first_line


class Session:
    """This process's connection to Ray for one run.

    - Ray already initialised in this process (a notebook, a test module): the run uses that session
      and leaves it open.
    - ``address`` (or the environment's ``RAY_ADDRESS``): the run joins that cluster and disconnects at
      the end; the cluster stays.
    - Otherwise: a local cluster is started for the run (no dashboard) and shut down with it.

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
        try:
            if address is not None:
                ray.init(address=address, **quiet)
            else:
                ray.init(num_cpus=num_cpus, include_dashboard=False, **quiet)
        except (ConnectionError, ValueError, RuntimeError, TimeoutError) as err:
            where = f"cannot join the Ray cluster at {address!r}" if address else "cannot start a local Ray cluster"
            key = "collector.address" if address else "collector.num_cpus"
            raise ConfigError(f"{key}: {where} ({first_line(err)})") from None
        return cls(owned=True, address=address)

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
