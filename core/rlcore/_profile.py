"""Per-hook profiling (``rlctl train --profile``): where the loop's time goes, by plugin and hook point."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Profiler:
    """Seconds spent in each part of the loop: collection, the loss, backward, the optimizer step, the
    checkpoints, handing values to the loggers, and every hook implementation of every plugin (the
    kernel's own included).

    Backward and the optimizer step have rows of their own (the kernel's default ``rl_optimizer``
    times them, and so may any other, with :meth:`add` and :meth:`timed`): they are taken out of
    the row of the ``rl_optimizer`` implementation that ran them, so that no second is counted twice.
    """

    def __init__(self) -> None:
        #: seconds by ``(plugin, hook)`` or ``("rl-core", kernel row)``
        self.hooks: dict[tuple[str, str], float] = {}
        #: rows timed inside another row, ``{inner: outer}`` (a hook's ops inside ``rlcore.ops.<point>``): taken out of it
        self.inside: dict[tuple[str, str], tuple[str, str]] = {}
        self.wall = 0.0
        self._logged: dict[str, float] = {}

    @contextmanager
    def timed(self, row: str) -> Iterator[None]:
        """Add the time of the ``with`` block to the kernel row ``row``."""
        tic = time.perf_counter()
        try:
            yield
        finally:
            self.add(row, time.perf_counter() - tic)

    def add(self, row: str, seconds: float) -> None:
        key = ("rl-core", row)
        self.hooks[key] = self.hooks.get(key, 0.0) + seconds

    def add_inside(self, row: tuple[str, str], seconds: float, outer: tuple[str, str]) -> None:
        """Add ``seconds`` to ``row`` (``(where, what)``), a part of the row ``outer``, whose total includes them.

        :param row: the inner row, e.g. ``("hooks.evaluation", "rl_post_steps")``.
        :param seconds: the time to add.
        :param outer: the row that was timed around it.
        """
        self.hooks[row] = self.hooks.get(row, 0.0) + seconds
        self.inside[row] = outer

    def rows(self) -> list[tuple[str, str, float]]:
        """``(where, what, seconds)``, the largest first."""
        seconds = dict(self.hooks)
        inner = seconds.get(("rl-core", "backward"), 0.0) + seconds.get(("rl-core", "optimizer step"), 0.0)
        optimizers = [key for key in seconds if key[1] == "rl_optimizer"]
        if optimizers and inner:
            ran = max(optimizers, key=seconds.__getitem__)  # the implementation that ran them (others answered None)
            seconds[ran] = max(seconds[ran] - inner, 0.0)
        for row, outer in self.inside.items():
            seconds[outer] = max(seconds.get(outer, 0.0) - self.hooks[row], 0.0)
        return sorted(((where, what, s) for (where, what), s in seconds.items()), key=lambda row: -row[2])

    def per_batch(self) -> dict[str, float]:
        """``perf/time/<where>/<what>``: the seconds of each row since the last call."""
        values = {}
        for where, what, total in self.rows():
            key = f"perf/time/{what.replace(' ', '_')}" if where == "rl-core" else f"perf/time/{where}/{what.removeprefix('rl_')}"
            values[key] = total - self._logged.get(key, 0.0)
            self._logged[key] = total
        return values

    def table(self) -> str:
        """A markdown table of the rows, with their share of the loop's wall time, and what is left untracked."""
        rows = self.rows()
        tracked = sum(s for _, _, s in rows)
        lines = [
            f"profile of the loop: {self.wall:.2f} s wall, {tracked / max(self.wall, 1e-9):.1%} of it in the rows below",
            "",
            "| where | what | seconds | share |",
            "| --- | --- | --- | --- |",
        ]
        lines += [f"| {where} | {what} | {s:.3f} | {s / max(self.wall, 1e-9):.1%} |" for where, what, s in rows]
        rest = self.wall - tracked
        lines.append(f"| rl-core | the loop itself (untracked) | {rest:.3f} | {rest / max(self.wall, 1e-9):.1%} |")
        return "\n".join(lines)
