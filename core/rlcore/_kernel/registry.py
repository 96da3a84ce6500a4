"""Named factories contributed through the registry hooks."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, make_dataclass
from typing import Any

from ..hookspecs import REGISTRIES
from .deadline import within
from .errors import PluginError, error_line, first_line
from .options import options_of


@dataclass(frozen=True)
class Algorithm:
    """A named algorithm: its default config and the builder of its loss module.

    ``build(config, observation_space, action_space, device)`` receives the resolved ``algo``
    section and Gymnasium's single-env spaces, and returns the loss module: a
    ``torch.nn.Module`` whose ``forward(batch)`` returns a TensorDict of losses (keys starting
    with ``loss`` are summed and minimised, other scalar keys are logged) and whose attribute
    ``policy`` is the ``tensordict.nn`` module that collects data (it writes ``action``
    and may write ``sample_log_prob`` and ``state_value``; in
    ``tensordict.nn.InteractionType.DETERMINISTIC`` it acts deterministically). The loss module may
    implement hooks as ``@rlcore.hookimpl`` methods: the trainer registers it as a plugin. It
    may set ``optim_steps_per_batch`` when ``trainer.optim_steps_per_batch`` is left ``null``.

    :param name: the name used by ``--algo`` and ``algo.name``.
    :param build: the builder; import heavy libraries inside it, not at module level.
    :param defaults: default config sections (``algo`` holds every key the algorithm accepts).
    :param summary: one line about the algorithm, shown by ``rlctl config show`` (no ALGO), which lists the algorithms.
    :param presets: ``{env id: config sections}`` merged over ``defaults`` when the run's env is
        that one (tuned hyperparameters, as in rl-zoo); the user's config still comes last.
    :param options: a dataclass declaring every ``algo`` key with its type (ranges as
        ``Annotated[float, rlcore.Range(gt=0)]``) and default; ``defaults["algo"]`` may change
        the defaults. Without it, each key's type is read from its value in ``defaults["algo"]``.
    :param needs_hooks: hooks of the config's ``hooks`` section the algorithm cannot train without
        (DQN's ``replay_buffer`` and ``target_updater``): a config that sets one to ``null`` is refused.
    """

    name: str
    build: Callable[..., Any]
    defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    summary: str = ""
    presets: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    options: type | None = None
    needs_hooks: tuple[str, ...] = ()

    def option_defaults(self) -> dict[str, Any]:
        """The ``algo`` keys with their defaults: the options' own, then ``defaults["algo"]``."""
        declared = {n: o.default for n, o in options_of(self.options)[0].items()} if self.options is not None else {}
        return {**declared, **{k: v for k, v in self.defaults.get("algo", {}).items() if k != "name"}}

    def option_types(self) -> Any:
        """What :func:`rlcore.validate_options` checks the ``algo`` keys against: :attr:`options`, or a
        dataclass made from the types of the values in ``defaults["algo"]``, each also taking ``null`` ("off")."""
        if self.options is not None:
            return self.options
        fields = [(k, Any if v is None else type(v) | None, _factory(v)) for k, v in self.option_defaults().items()]
        return make_dataclass(f"{self.name}_options", [(k, t, field(default_factory=f)) for k, t, f in fields])


def _factory(value: Any) -> Callable[[], Any]:
    """A default factory returning ``value`` (mutable defaults need factories in a dataclass)."""
    return lambda: value


def entries(result: Any, kind: str) -> list[tuple[str, Any]]:
    """The ``(name, factory)`` pairs of one registry hook's result, checked.

    :param result: what the hook returned: a list of :class:`Algorithm` for ``algorithms``,
        ``{name: factory}`` for every other kind, or ``None``.
    :param kind: the registry kind.
    :raises TypeError: saying what is wrong with ``result``.
    """
    if result is None:
        return []
    if kind == "algorithms":
        if not isinstance(result, (list, tuple)) or not all(isinstance(a, Algorithm) for a in result):
            raise TypeError(f"returned {_shape(result)}, expected a list of rlcore.Algorithm")
        bad = [a.name for a in result if not isinstance(a.name, str) or not callable(a.build)]
        if bad:
            raise TypeError(f"algorithm {bad[0]!r} has no callable build")
        return [(a.name, a) for a in result]
    if not isinstance(result, Mapping):
        raise TypeError(f"returned {_shape(result)}, expected a dict of name -> factory")
    for name, factory in result.items():
        if not isinstance(name, str) or not callable(factory):
            raise TypeError(f"entry {name!r} is {type(factory).__name__}, expected a callable factory under a string name")
    return list(result.items())


def _shape(value: Any) -> str:
    if not isinstance(value, (list, tuple)):
        return f"a {type(value).__name__}"
    return f"a {type(value).__name__} of {', '.join(sorted({type(v).__name__ for v in value})) or 'nothing'}"


def collect(hook_caller: Any, kind: str, on_error: Callable[[str, str], None], seconds: float = math.inf) -> dict[str, tuple[str, Any]]:
    """Merge one registry hook's results into ``{name: (plugin name, factory)}``.

    A plugin whose hook raises or returns something else than it should is left out, and
    ``on_error(plugin name, message)`` is told; the others' names stay available.

    :param hook_caller: the pluggy hook caller of the registry hook.
    :param kind: the registry kind, for error messages.
    :param on_error: called for each plugin left out.
    :param seconds: how long one plugin's hook may take (:func:`rlcore._kernel.deadline.within`).
    :raises PluginError: when two plugins register the same name.
    """
    found: dict[str, tuple[str, Any]] = {}
    hook_name = REGISTRIES[kind]
    for impl in reversed(hook_caller.get_hookimpls()):
        try:
            items = entries(within(impl.function, seconds), kind)
        except Exception as err:  # a plugin may raise anything: it is left out, never the host
            on_error(impl.plugin_name, f"{hook_name} {_error_text(err)}")
            continue
        for name, factory in items:
            if name in found and found[name][0] != impl.plugin_name:
                raise PluginError(
                    f"{kind} name {name!r} is registered by both "
                    f"{found[name][0]!r} and {impl.plugin_name!r}; block one with --no-plugin"
                )
            found[name] = (impl.plugin_name, factory)
    return found


def _error_text(err: BaseException) -> str:
    text = first_line(err)
    if isinstance(err, TypeError) and text.startswith(("returned", "entry", "algorithm")):
        return text
    return f"failed: {error_line(err)}"
