"""Named factories contributed through the registry hooks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import PluginError

#: registry kind -> (hook name, what the config calls it)
KINDS: dict[str, str] = {
    "algorithms": "rl_register_algorithms",
    "loggers": "rl_register_loggers",
    "envs": "rl_register_envs",
    "env_wrappers": "rl_register_env_wrappers",
    "checkpoint_backends": "rl_register_checkpoint_backends",
    "hooks": "rl_register_hooks",
}


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
    :param summary: one line for ``rlctl plugins list``.
    :param presets: ``{env id: config sections}`` merged over ``defaults`` when the run's env is
        that one (tuned hyperparameters, as in rl-zoo); the user's config still comes last.
    """

    name: str
    build: Callable[..., Any]
    defaults: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    summary: str = ""
    presets: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)


def collect(hook_caller: Any, kind: str) -> dict[str, tuple[str, Any]]:
    """Merge one registry hook's results into ``{name: (plugin name, factory)}``.

    :param hook_caller: the pluggy hook caller of the registry hook.
    :param kind: the registry kind, for error messages.
    :raises PluginError: when two plugins register the same name.
    """
    found: dict[str, tuple[str, Any]] = {}
    for impl in reversed(hook_caller.get_hookimpls()):
        result = impl.function()
        if not result:
            continue
        items = result.items() if isinstance(result, Mapping) else ((a.name, a) for a in result)
        for name, factory in items:
            if name in found and found[name][0] != impl.plugin_name:
                raise PluginError(
                    f"{kind} name {name!r} is registered by both "
                    f"{found[name][0]!r} and {impl.plugin_name!r}; block one with --no-plugin"
                )
            found[name] = (impl.plugin_name, factory)
    return found
