"""The hook recorder: a plugin that records every loop and lifecycle hook call of a trainer, in order."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlcore import hookimpl

if TYPE_CHECKING:
    from rlcore import Trainer

#: The name the recorder registers under (it leaves itself out of :attr:`HookCall.plugins`).
RECORDER_NAME = "rlcore_testing.recorder"


@dataclass(repr=False)
class HookCall:
    """One call of a hook point.

    :param name: the hook, e.g. ``rl_post_optim``.
    :param kwargs: the arguments it was called with (``trainer``, ``batch``, ``losses``, ...), the objects themselves.
    :param plugins: the plugins whose implementations take part, in the order pluggy calls them; an op given
        to ``register_op`` is named after what registered it (``hooks.<name>``, or ``op <its name>``).
    :param result: what the call returned (for a data hook, the final batch).
    :param error: what it raised, if it raised.
    """

    name: str
    kwargs: dict[str, Any]
    plugins: tuple[str, ...]
    result: Any = None
    error: BaseException | None = None

    def __getitem__(self, argument: str) -> Any:
        """``call["batch"]``: an argument of the call."""
        return self.kwargs[argument]

    def __repr__(self) -> str:
        error = f", error={self.error!r}" if self.error is not None else ""
        return f"HookCall({self.name}, plugins={list(self.plugins)}{error})"


@dataclass(eq=False)
class HookRecorder:
    """Records every loop and lifecycle hook call of the trainers it is registered with.

    Its implementations are ``tryfirst`` wrappers, so a call is recorded before any other
    implementation runs, with the call's result (or error) once they all have::

        recorder = HookRecorder().register(trainer)
        trainer.register_plugin(my_plugin, "mine")
        trainer.train()
        i = recorder.names().index("rl_post_optim")
        assert recorder.calls[i - 1].name == "rl_optimizer" and "mine" in recorder.calls[i].plugins
    """

    calls: list[HookCall] = field(default_factory=list)

    def register(self, trainer: Trainer) -> HookRecorder:
        """Register with ``trainer`` (a plugin of that trainer only).

        :param trainer: the trainer to record.
        :return: the recorder itself.
        """
        trainer.register_plugin(self, RECORDER_NAME)
        return self

    def names(self, plugin: str | None = None) -> list[str]:
        """The hooks called, in order.

        :param plugin: only the calls in which this plugin's implementation takes part.
        """
        return [call.name for call in self.calls if plugin is None or plugin in call.plugins]

    def of(self, name: str) -> list[HookCall]:
        """The calls of one hook, in order.

        :param name: the hook, with or without its ``rl_`` prefix (``post_optim``).
        """
        name = name if name.startswith("rl_") else f"rl_{name}"
        return [call for call in self.calls if call.name == name]

    def clear(self) -> None:
        """Forget the calls recorded so far."""
        self.calls.clear()

    def __iter__(self) -> Iterator[HookCall]:
        return iter(self.calls)

    def __len__(self) -> int:
        return len(self.calls)

    def __repr__(self) -> str:
        shown = ", ".join(name.removeprefix("rl_") for name in self.names()[:12])
        return f"HookRecorder({len(self.calls)} calls: {shown}{', ...' if len(self.calls) > 12 else ''})"

    def _around(self, name: str, **kwargs: Any) -> Generator[None, Any, Any]:
        """Record the call, let the other implementations run, record the outcome."""
        impls = getattr(kwargs["trainer"].plugin_manager.hook, name).get_hookimpls()
        call = HookCall(name, kwargs, tuple(getattr(i.plugin, "op_of", i.plugin_name) for i in reversed(impls) if i.plugin is not self))
        self.calls.append(call)
        try:
            call.result = yield
        except BaseException as err:
            call.error = err
            raise
        return call.result

    # -- lifecycle hooks
    @hookimpl(wrapper=True, tryfirst=True)
    def rl_setup(self, trainer: Trainer) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_setup", trainer=trainer))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_shutdown(self, trainer: Trainer) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_shutdown", trainer=trainer))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_exception(self, trainer: Trainer, exception: BaseException) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_exception", trainer=trainer, exception=exception))

    # -- loop hooks
    @hookimpl(wrapper=True, tryfirst=True)
    def rl_batch_process(self, trainer: Trainer, batch: Any) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_batch_process", trainer=trainer, batch=batch))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_pre_steps_log(self, trainer: Trainer, batch: Any) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_pre_steps_log", trainer=trainer, batch=batch))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_pre_optim_steps(self, trainer: Trainer) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_pre_optim_steps", trainer=trainer))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_process_optim_batch(self, trainer: Trainer, batch: Any) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_process_optim_batch", trainer=trainer, batch=batch))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_post_loss(self, trainer: Trainer, batch: Any, losses: Any) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_post_loss", trainer=trainer, batch=batch, losses=losses))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_optimizer(self, trainer: Trainer, losses: Any) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_optimizer", trainer=trainer, losses=losses))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_post_optim(self, trainer: Trainer) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_post_optim", trainer=trainer))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_post_optim_log(self, trainer: Trainer, batch: Any) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_post_optim_log", trainer=trainer, batch=batch))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_post_steps(self, trainer: Trainer) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_post_steps", trainer=trainer))

    @hookimpl(wrapper=True, tryfirst=True)
    def rl_post_steps_log(self, trainer: Trainer, batch: Any) -> Generator[None, Any, Any]:
        return (yield from self._around("rl_post_steps_log", trainer=trainer, batch=batch))
