"""Per-hook profiling (``rlctl train --profile``): where the loop's time goes, by plugin and hook point."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from types import CodeType, FrameType
from typing import Any

import pluggy

from .manager import PluginManager

#: ``(where, what)``: a plugin and a hook (``("replay", "rl_batch_process")``), or ``("rl-core", part)`` for the loop's own parts
Row = tuple[str, str]


class Profiler:
    """Seconds spent in each part of the loop: collection, the loss, backward, the optimizer step, the
    checkpoints, handing values to the loggers, and every hook implementation of every plugin (the
    kernel's own included).

    The loop's parts are timed with :meth:`timed`. The hook implementations are timed through
    pluggy's :meth:`~pluggy.PluginManager.add_hookcall_monitoring` (:meth:`watch`): while a hook call
    runs, a profile function (``sys.setprofile``) notes when each implementation's frame is entered
    and left; what the call takes besides its implementations is the row ``hook calls``. Times are
    exclusive: a part timed inside an implementation (the trainer's own ``rl_optimizer`` times backward
    and the step) is taken out of that implementation's row, so that no second is counted twice.
    """

    enabled = True

    def __init__(self) -> None:
        #: seconds by row
        self.seconds: dict[Row, float] = {}
        #: the loop's wall time, once it ended
        self.wall = 0.0
        self._logged: dict[str, float] = {}
        #: ``[frame or None, row, start, seconds of inner rows]`` of what is being timed, innermost last
        self._stack: list[list[Any]] = []
        self._codes: dict[CodeType, list[tuple[pluggy.HookImpl, Row]]] = {}  # the row of each implementation, by its code
        self._seen: set[int] = set()
        self._depth = 0
        self._outer_profile: Any = None

    @contextlib.contextmanager
    def timed(self, part: str) -> Iterator[None]:
        """Add the time of the ``with`` block to the loop's part ``part`` (a row ``("rl-core", part)``)."""
        entry = [None, ("rl-core", part), time.perf_counter(), 0.0]
        self._stack.append(entry)
        try:
            yield
        finally:
            self._pop(entry)

    def watch(self, pm: PluginManager) -> Callable[[], None]:
        """Time every implementation of every hook ``pm`` calls from now on, in a row per plugin (an op's, given to
        ``register_op``, in the row of what registered it: its ``op_of``) and hook; the calls themselves, rl-core's
        calling styles included (``around_call`` of its manager), are the row ``hook calls``.

        :param pm: the plugin manager.
        :return: the function that stops it.
        """

        def before(hook_name: str, impls: Sequence[pluggy.HookImpl], kwargs: Any) -> None:
            self._stack.append([None, ("rl-core", "hook calls"), time.perf_counter(), 0.0])  # pluggy's own time, less the rows inside
            for impl in (*getattr(pm.hook, hook_name).get_hookimpls(), *impls):  # (a data hook's chain runs the plain ones)
                if impl.plugin is not None and id(impl) not in self._seen:
                    self._seen.add(id(impl))
                    function = getattr(impl.function, "__func__", impl.function)
                    row = (getattr(impl.plugin, "op_of", impl.plugin_name), hook_name)
                    self._codes.setdefault(function.__code__, []).append((impl, row))
            if self._depth == 0:
                self._outer_profile = sys.getprofile()
                sys.setprofile(self._frame_event)
            self._depth += 1

        def after(outcome: Any, hook_name: str, impls: Sequence[pluggy.HookImpl], kwargs: Any) -> None:
            self._depth -= 1
            if self._depth == 0:
                sys.setprofile(self._outer_profile)
            self._pop(self._stack[-1])

        undo = pm.add_hookcall_monitoring(before, after)
        around = pm.around_call
        pm.around_call = lambda: self.timed("hook calls")  # (rl-core's calling styles: their dispatch, before pluggy's)

        def unwatch() -> None:
            pm.around_call = around
            undo()

        return unwatch

    def _frame_event(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            impls = self._codes.get(frame.f_code)
            if impls:  # (two plugins of one class share a code object: the frame's self tells them apart)
                owner = frame.f_locals.get("self") if len(impls) > 1 else None
                row = next((row for impl, row in impls if getattr(impl.function, "__self__", owner) is owner), impls[0][1])
                self._stack.append([frame, row, time.perf_counter(), 0.0])
        elif event == "return" and self._stack and self._stack[-1][0] is frame:
            self._pop(self._stack[-1])

    def _pop(self, entry: list[Any]) -> None:
        while self._stack and self._stack.pop() is not entry:  # (frames an exception left without a return event)
            pass
        elapsed = time.perf_counter() - entry[2]
        row = entry[1]
        self.seconds[row] = self.seconds.get(row, 0.0) + elapsed - entry[3]
        if self._stack:
            self._stack[-1][3] += elapsed

    def add(self, part: str, seconds: float) -> None:
        """Add ``seconds`` to the loop's part ``part``."""
        self.seconds[("rl-core", part)] = self.seconds.get(("rl-core", part), 0.0) + seconds

    def rows(self) -> list[tuple[str, str, float]]:
        """``(where, what, seconds)``, the largest first."""
        return sorted(((where, what, s) for (where, what), s in self.seconds.items()), key=lambda row: -row[2])

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
        wall = max(self.wall, 1e-9)
        lines = [
            f"profile of the loop: {self.wall:.2f} s wall, {tracked / wall:.1%} of it in the rows below",
            "",
            "| where | what | seconds | share |",
            "| --- | --- | --- | --- |",
        ]
        lines += [f"| {where} | {what} | {s:.3f} | {s / wall:.1%} |" for where, what, s in rows]
        rest = self.wall - tracked
        lines.append(f"| rl-core | the loop itself (untracked) | {rest:.3f} | {rest / wall:.1%} |")
        return "\n".join(lines)


class NoProfiler(Profiler):
    """A run that does not profile: every method does nothing (the loop calls them all the same)."""

    enabled = False

    def timed(self, part: str) -> contextlib.nullcontext[None]:  # type: ignore[override]
        return contextlib.nullcontext()

    def watch(self, pm: PluginManager) -> Callable[[], None]:
        return lambda: None

    def add(self, part: str, seconds: float) -> None:
        pass

    def per_batch(self) -> dict[str, float]:
        return {}
