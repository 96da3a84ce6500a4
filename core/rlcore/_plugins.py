"""Plugin discovery through the ``rlcore.plugins`` entry points, and the plugin manager."""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import inspect
import os
import re
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from importlib import metadata
from typing import Any

import pluggy

from . import hookspecs
from ._errors import ConfigError, PluginError
from ._markers import PROJECT
from ._registry import KINDS, collect, entries

ENTRY_POINT_GROUP = "rlcore.plugins"
ENV_PLUGINS = "RLCORE_PLUGINS"
CORE_DISTRIBUTION = "rl-core"

#: Who provides the first-party names: a distribution under ``plugins/``, or a builtin plugin of
#: rl-core (by its entry-point name), so that a missing capability names what to install or
#: unblock. A test keeps it equal to what the first-party plugins register.
FIRST_PARTY: dict[str, dict[str, str]] = {
    "algorithms": {n: "rl-plugin-pg" for n in ("ppo", "a2c", "pg", "spg", "ppo-kl")}
    | {"dqn": "rl-plugin-dqn", "sac": "rl-plugin-sac", "td3": "rl-plugin-td3", "ddpg": "rl-plugin-td3"},
    "loggers": {n: f"rl-plugin-{n}" for n in ("tensorboard", "mlflow", "wandb")}
    | {"csv": "rlcore.csv", "console": "rlcore.console"},
    "checkpoint_backends": {"torchsnapshot": "rl-plugin-torchsnapshot", "torch": "rlcore.torch_checkpoint"},
    "env_wrappers": {
        n: "rl-plugin-envs"
        for n in (
            "normalize_observation", "normalize_reward", "fixed_normalize_observation", "scale_reward", "clip_reward",
            "frame_skip", "time_limit", "frame_stack", "resize", "grayscale", "atari", "pixels", "*.*",
        )
    },
    "vectorizations": {"sync": "rlcore.gymnasium", "async": "rlcore.gymnasium", "envpool": "rl-plugin-envs", "ale": "rl-plugin-envs"},
    "collectors": {"local": "rlcore.gymnasium", "ray": "rl-plugin-ray"},
    "hooks": {n: "rl-plugin-video" for n in ("video_recorder", "tensordict_recorder", "evaluation")}
    | {n: "rl-plugin-replay" for n in ("replay_buffer", "target_updater")}
    | {
        n: "rl-plugin-hooks"
        for n in (
            "batch_subsampler", "clear_cuda_cache", "count_frames_log", "log_scalar", "log_validation_reward",
            "optimizer_hook", "reward_normalizer", "select_keys", "update_weights",
        )
    },
    "envs": {},
    "commands": {"plot": "rl-plugin-plot", "eval --video": "rl-plugin-video", "eval --fps": "rl-plugin-video"},
}
#: The entry-point names of the first-party distributions (``rl-plugin-<name>``, one each under ``plugins/``,
#: which a test keeps equal): a third-party entry point of the same name never takes it from them.
FIRST_PARTY_PLUGINS = frozenset(
    {"dqn", "envs", "hooks", "mlflow", "nets", "pg", "plot", "ray", "replay", "sac", "td3", "tensorboard", "torchsnapshot", "video", "wandb"}
)
#: What a function named after a hook, without ``@hookimpl``, implements it with (pytest's rule for ``pytest_`` names).
_PLAIN_IMPL = {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": False, "trylast": False, "specname": None}


def first_party(name: str, distribution: str) -> bool:
    """Whether the entry point ``name`` of ``distribution`` is rl-core's own: a builtin, or a first-party plugin."""
    return distribution == CORE_DISTRIBUTION or (name in FIRST_PARTY_PLUGINS and distribution == f"rl-plugin-{name}")


@dataclass
class PluginInfo:
    """What ``rlctl plugins list`` shows of one plugin.

    :param name: the entry-point name.
    :param distribution: the distribution that declares it.
    :param version: that distribution's version.
    :param value: the entry point's target (``module`` or ``module:object``).
    :param status: ``ok``, ``blocked`` or ``error: <one line>``.
    :param hooks: the hooks it implements.
    :param provides: ``{registry kind: [names]}``.
    """

    name: str
    distribution: str
    version: str
    value: str
    status: str = "ok"
    hooks: list[str] = field(default_factory=list)
    provides: dict[str, list[str]] = field(default_factory=dict)

    @property
    def builtin(self) -> bool:
        """Whether rl-core itself ships it."""
        return self.distribution == CORE_DISTRIBUTION

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "value": self.value,
            "builtin": self.builtin,
            "hooks": self.hooks,
            "provides": self.provides,
            "status": self.status,
        }


def parse_names(value: str | None) -> set[str] | None:
    """Split ``RLCORE_PLUGINS``-style text; ``None`` means no restriction, ``""`` means none."""
    if value is None:
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


def _unknown_arguments(err: BaseException) -> str | None:
    """pluggy's refusal of a hook implementation's argument names, as one line with the valid ones; else ``None``."""
    hook = re.search(r"for hook '(rl_\w+)'", str(err))
    names = re.search(r"Argument\(s\) \{(.*?)\} are declared in the hookimpl", str(err))
    spec = getattr(hookspecs, hook.group(1), None) if hook else None
    if hook is None or spec is None or names is None:
        return None
    valid = ", ".join(inspect.signature(spec).parameters)
    return f"{hook.group(1)} takes no argument {names.group(1)} (valid choices: {valid})"


def _one_line(err: BaseException) -> str:
    """``Type: first line`` of an error, with its last line too when it has several (pluggy's validation)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    text = lines[0] if len(lines) == 1 else f"{lines[0]}: {lines[-1]}"
    return f"{type(err).__name__}: {text}"


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, with discovery, per-plugin status and the registries.

    :param only: load only these third-party plugins (entry-point or distribution names);
        ``None`` reads ``RLCORE_PLUGINS``, which when unset loads every plugin. rl-core's
        builtins load either way unless blocked.
    :param block: entry-point or distribution names never to load (``rl-core`` blocks every builtin).
    :param discover: whether to load entry points at all.
    """

    def __init__(
        self,
        only: Iterable[str] | None = None,
        block: Iterable[str] = (),
        discover: bool = True,
    ) -> None:
        super().__init__(PROJECT)
        self.add_hookspecs(hookspecs)
        self.infos: dict[str, PluginInfo] = {}
        self._only = set(only) if only is not None else parse_names(os.environ.get(ENV_PLUGINS))
        self._block = set(block)
        self._registries: dict[str, dict[str, tuple[str, Any]]] = {}
        self._warned: set[str] = set()  # plugins already warned about (once each)
        if discover:
            self.load_entrypoints()

    # ------------------------------------------------------------------ discovery
    def _wanted(self, name: str, dist: str) -> bool:
        if {name, dist} & self._block:
            return False
        if dist == CORE_DISTRIBUTION or self._only is None:
            return True
        return bool({name, dist} & self._only)

    def load_entrypoints(self) -> None:
        """Import and register every wanted ``rlcore.plugins`` entry point, recording each status.

        Two distributions may declare the same entry-point name: a wanted one takes it before a
        blocked one, and rl-core's own before a third party's, whose status then says so.
        """

        def order(ep: metadata.EntryPoint) -> tuple[bool, str, bool, bool]:
            dist = ep.dist.name if ep.dist else "?"
            return dist != CORE_DISTRIBUTION, ep.name, not self._wanted(ep.name, dist), not first_party(ep.name, dist)

        for ep in sorted(_entry_points(), key=order):
            dist = ep.dist.name if ep.dist else "?"
            info = PluginInfo(ep.name, dist, ep.dist.version if ep.dist else "?", ep.value)
            if ep.name in self.infos:
                holder = self.infos[ep.name].distribution
                if holder == dist:
                    continue  # the same distribution seen twice on sys.path
                info.name = f"{ep.name} ({dist})"
                wanted = self._wanted(ep.name, dist)
                info.status = f"error: plugin name {ep.name!r} is taken by {holder}; rename this entry point" if wanted else "blocked"
                self.infos[info.name] = info
                continue
            self.infos[ep.name] = info
            if not self._wanted(ep.name, dist):
                info.status = "blocked"
                self.set_blocked(ep.name)
                continue
            try:
                plugin = ep.load()
            except BaseException as err:
                if isinstance(err, KeyboardInterrupt):
                    raise
                info.status = f"error: import failed: {_one_line(err)}"
                continue
            self.add_plugin(plugin, ep.name, info)

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """pluggy's reading of ``@hookimpl``; as in pytest, a function named ``rl_...`` implements a hook without it too
        (so that a misspelt name is reported, not ignored)."""
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("rl_") and inspect.isroutine(getattr(plugin, name, None)):
            opts = dict(_PLAIN_IMPL)  # type: ignore[assignment]
        return opts

    def unknown_names(self) -> tuple[list[str], list[str]]:
        """The names given to load only (``--plugin``, ``RLCORE_PLUGINS``) and to block (``--no-plugin``) that name no
        discovered plugin (by entry-point or distribution name): ``(only, block)``."""
        known = {CORE_DISTRIBUTION} | {n for i in self.infos.values() for n in (_entry_name(i), i.distribution)}
        return sorted((self._only or set()) - known), sorted(self._block - known)

    def known_names(self) -> list[str]:
        """The entry-point names of the discovered third-party plugins (the valid ``--plugin`` names)."""
        return sorted({_entry_name(i) for i in self.infos.values() if not i.builtin and i.distribution})

    def add_plugin(self, plugin: Any, name: str, info: PluginInfo | None = None) -> bool:
        """Register ``plugin`` and validate it; a failure is recorded in its status, never raised.

        :return: whether it is registered.
        """
        info = info or self.infos.setdefault(name, PluginInfo(name, "", "", repr(plugin)))
        try:
            registered = self.register(plugin, name)
        except Exception as err:  # pluggy's validation errors and anything a plugin's attributes raise
            info.status = f"error: {_unknown_arguments(err) or _one_line(err)}"
            return False
        if registered is None:  # pluggy's answer for a blocked name
            info.status = "blocked"
            return False
        unknown = sorted(c.name for c in self.get_hookcallers(plugin) or [] if not c.has_spec())
        if unknown:
            self.unregister(plugin)
            close = difflib.get_close_matches(unknown[0], [n for n in dir(hookspecs) if n.startswith("rl_")], n=1, cutoff=0.8)
            hint = f" (did you mean {close[0]}?)" if close else ""
            info.status = f"error: implements unknown hook {', '.join(unknown)}{hint}"
            return False
        info.hooks = sorted(c.name for c in self.get_hookcallers(plugin) or [])
        self._registries.clear()
        return True

    def add_named(self, plugin: Any, name: str) -> None:
        """Register ``plugin`` under ``name`` (a run's own plugins, a test's), or refuse it in one line.

        :raises ValueError: when another plugin has ``name``, or ``plugin`` is invalid (an unknown hook, ...).
        """
        if self.has_plugin(name):  # (add_plugin would note the failure on the plugin that has the name)
            raise ValueError(f"plugin name {name!r} is taken by another plugin; register this one under another name")
        if not self.add_plugin(plugin, name):
            raise ValueError(self.infos[name].status.removeprefix("error: "))

    def copy(self) -> PluginManager:
        """A new manager with the same plugins registered (and the same statuses), sharing the plugin objects.

        A trainer works on a copy, so that what it registers for its own run stays out of ``self``.
        """
        other = PluginManager(only=self._only, block=self._block, discover=False)
        other.infos = {name: replace(info, hooks=list(info.hooks), provides=dict(info.provides)) for name, info in self.infos.items()}
        for name, plugin in self.list_name_plugin():
            if plugin is None:
                other.set_blocked(name)
            else:
                other.register(plugin, name)
        return other

    def broken(self) -> list[PluginInfo]:
        """Plugins that failed to load."""
        return [i for i in self.infos.values() if i.status.startswith("error")]

    def describe(self) -> list[PluginInfo]:
        """Every discovered plugin with what it provides (registry hooks are called one plugin at a time)."""
        for info in self.infos.values():
            plugin = self.get_plugin(info.name)
            if plugin is None or not info.ok:
                continue
            for kind, hook_name in KINDS.items():
                impl = getattr(plugin, hook_name, None)
                if impl is None or hook_name not in info.hooks:
                    continue
                try:
                    names = [name for name, _ in entries(impl(), kind)]
                except TypeError as err:
                    info.status = f"error: {hook_name} {err}"
                    break
                except Exception as err:
                    info.status = f"error: {hook_name} failed: {_one_line(err)}"
                    break
                info.provides[kind] = sorted(names)
            if "rl_register_commands" in info.hooks and info.ok:
                try:
                    info.provides["commands"] = _commands_added(plugin, self)
                except Exception as err:
                    info.status = f"error: rl_register_commands failed: {_one_line(err)}"
        self._note_clashes()
        return list(self.infos.values())

    def _note_clashes(self) -> None:
        """Say in the status of a plugin that registers a name another plugin registers too (runs refuse both, see
        :func:`rlcore._registry.collect`): a third party's, or each one's when no clashing plugin is rl-core's own."""
        providers: dict[tuple[str, str], list[PluginInfo]] = {}
        for info in self.infos.values():
            for kind, names in info.provides.items():
                for name in names:
                    providers.setdefault((kind, name), []).append(info)
        for (kind, name), infos in providers.items():
            if len(infos) < 2 or kind == "commands":
                continue
            ours = [i for i in infos if first_party(_entry_name(i), i.distribution)]
            for info in infos:
                if info in ours or not info.ok:
                    continue
                others = ", ".join(repr(_entry_name(i)) for i in infos if i is not info)
                info.status = f"error: {kind} name {name!r} is also registered by {others}; block one with --no-plugin"

    # ------------------------------------------------------------------ registries
    def registry(self, kind: str) -> dict[str, tuple[str, Any]]:
        """``{name: (plugin name, factory)}`` for one registry kind (see :data:`rlcore._registry.KINDS`)."""
        if kind not in self._registries:
            broken: list[tuple[str, str]] = []
            found = collect(getattr(self.hook, KINDS[kind]), kind, lambda plugin, message: broken.append((plugin, message)))
            if broken and any([self.leave_out(plugin, message) for plugin, message in broken]):
                self._registries.clear()  # (what they registered in other kinds goes too)
                return self.registry(kind)
            self._registries[kind] = found
        return self._registries[kind]

    def leave_out(self, plugin: str, message: str) -> bool:
        """A plugin whose registry hook or command failed takes no part: its hooks are unregistered, its status says why (warned once).

        :return: whether it was registered until now.
        """
        info = self.infos.setdefault(plugin, PluginInfo(plugin, "", "", ""))
        registered = self.has_plugin(plugin)
        if registered:
            self.unregister(name=plugin)
            self._registries.clear()  # (what it registered goes)
        if info.ok:
            info.status = f"error: {message}"
            self._warned.add(plugin)
            warnings.warn(f"plugin {plugin!r} ({info.distribution or '?'}) is not used: {message}", stacklevel=4)
        return registered

    def note_origin(self, error: BaseException) -> None:
        """Note on ``error`` the plugin whose code raised it (the innermost frame of its traceback in a plugin's code),
        unless a hook call already named the plugin (see :func:`where_failed`): for what the loop calls outside
        hooks, the loss module's forward and the envs' steps.

        :param error: an error of the run.
        """
        _mark(error, self, None, "")

    def factory(self, kind: str, name: str, key: str | None = None) -> Any:
        """The factory registered under ``name``, or a one-line error naming what to install.

        :param kind: the registry kind.
        :param name: the name asked for.
        :param key: the config key that asked, for the message.
        :raises ConfigError: when nothing provides ``name``.
        :raises PluginError: when the plugin that would provide it is blocked or broken.
        """
        found = self.provider(kind, name)
        if found is not None:
            return found[1]
        registry = self.registry(kind)
        where = f"{key}: " if key else ""
        singular = kind.rstrip("s").replace("_", " ")
        provider = FIRST_PARTY.get(kind, {}).get(name)
        for info in self.infos.values():
            if provider in (info.distribution, info.name) or info.name == name:
                needs = f"{where}{singular} {name!r} needs plugin {_entry_name(info)!r} ({info.distribution})"
                if info.status == "blocked":
                    raise PluginError(f"{needs}, which is blocked")
                if not info.ok:
                    raise PluginError(f"{needs}, which is broken: {info.status[7:]}")
        hint = f"; install {provider} for it" if provider and provider.startswith("rl-plugin-") else ""
        failed = [i for i in self.infos.values() if i.status.startswith(f"error: {KINDS[kind]} ")]
        if failed and not hint:
            hint = "; " + "; ".join(f"plugin {i.name!r} ({i.distribution or '?'}) could not register: {i.status[7:]}" for i in failed)
        unloaded = [
            f"{_entry_name(i)} ({i.distribution})" for i in self.infos.values() if i.status == "blocked" and not first_party(_entry_name(i), i.distribution)
        ]
        if unloaded and not hint:  # (what they provide is not known without loading them)
            hint = f"; installed but not loaded in this run (--plugin, --no-plugin, RLCORE_PLUGINS): {', '.join(unloaded)}"
        choices = ", ".join(sorted(n for n in registry if "*" not in n)) or "none loaded"
        patterns = [n for n in registry if "*" in n]
        if patterns:
            choices += f", or a name of the form {' or '.join(patterns)}"
        raise ConfigError(f"{where}unknown {singular} {name!r} (valid choices: {choices}){hint}")

    @contextlib.contextmanager
    def making(self, kind: str, name: str) -> Iterator[str]:
        """Around the call of the factory of ``name`` (from :meth:`factory`): an error raised inside names the plugin
        that provides it (``plugin 'x' (rl-plugin-x) making hook 'name'``, see :func:`where_failed`).

        :param kind: the registry kind.
        :param name: the name made.
        :return: the plugin as messages name it, for errors of the caller's own.
        """
        found = self._registered(kind, name)
        plugin = found[1][0] if found is not None else "?"
        doing = f"making {kind.rstrip('s').replace('_', ' ')} {name!r}"
        try:
            yield _label(self, plugin)
        except ModuleNotFoundError as err:  # a dependency of the plugin that is not installed: the set-up's fault, exit 2
            if err.name is None:
                _mark(err, self, plugin, doing)
                raise
            raise PluginError(f"{_label(self, plugin)} {doing}: needs the module {err.name!r}, which is not installed") from None
        except BaseException as err:
            _mark(err, self, plugin, doing)
            raise

    def provider(self, kind: str, name: str) -> tuple[str, Any] | None:
        """``(plugin name, factory)`` of what provides ``name``, or ``None``.

        A registered name with a ``*`` is a pattern (``*.*``: any dotted import path): its factory,
        called with the name asked for, returns the factory for that name.

        :param kind: the registry kind.
        :param name: the name asked for.
        """
        found = self._registered(kind, name)
        if found is None:
            return None
        key, (plugin, factory) = found
        return (plugin, factory(name)) if "*" in key else (plugin, factory)

    def _registered(self, kind: str, name: str) -> tuple[str, tuple[str, Any]] | None:
        """``(registered name or pattern, (plugin name, its factory or resolver))`` that ``name`` matches, or ``None``."""
        registry = self.registry(kind)
        if name in registry:
            return name, registry[name]
        return next(((key, found) for key, found in registry.items() if "*" in key and fnmatch.fnmatchcase(name, key)), None)

    def warn_broken(self) -> None:
        """Warn about every broken plugin, once each (one whose registry hook failed was warned about then)."""
        for info in self.broken():
            if info.name not in self._warned:
                self._warned.add(info.name)
                warnings.warn(f"plugin {info.name!r} ({info.distribution}) is not loaded: {info.status[7:]}", stacklevel=2)

    # ------------------------------------------------------------------ calling
    def call_chain(self, hook_name: str, value_name: str, expected: type | None = None, timer: Timer | None = None, **kwargs: Any) -> Any:
        """Call a data hook so that each implementation receives the previous one's output.

        Order, ``tryfirst``/``trylast`` and wrappers (new-style ``wrapper=True`` and old-style
        ``hookwrapper=True``) behave as in any pluggy call; a wrapper sees the original input
        and the final output.

        :param hook_name: the data hook.
        :param value_name: the argument that carries the data (``batch``).
        :param expected: the type an implementation may return besides ``None`` (a ``TypeError``
            naming the plugin and the hook otherwise).
        :param timer: adds each implementation's seconds under ``(plugin name, hook name)``.
        :return: the last non-``None`` output, or the input.
        """
        return self._call(hook_name, kwargs, "chain", expected, timer, value_name)

    def call_each(
        self, hook_name: str, expected: type | None = None, timer: Timer | None = None, **kwargs: Any
    ) -> list[tuple[str, Any]]:
        """Call a hook and return ``(plugin name, result)`` of each implementation that returned something.

        Like a pluggy call (order, wrappers: they see the plain list of results), but a result is
        known by its plugin, so that a bad one is named.

        :param hook_name: the hook.
        :param expected: the type a result must have (a ``TypeError`` naming the plugin and the hook otherwise).
        :param timer: adds each implementation's seconds under ``(plugin name, hook name)``.
        """
        return self._call(hook_name, kwargs, "each", expected, timer)

    def call_every(self, hook_name: str, timer: Timer | None = None, **kwargs: Any) -> None:
        """Call every implementation of a hook, even after one raised (``rl_shutdown``: each plugin cleans up its own).

        :param hook_name: the hook.
        :param timer: adds each implementation's seconds under ``(plugin name, hook name)``.
        :raises BaseException: the first error an implementation raised, once all have run.
        """
        self._call(hook_name, kwargs, "every", None, timer)

    def call_first(self, hook_name: str, timer: Timer | None = None, **kwargs: Any) -> Any:
        """Call a ``firstresult`` hook: the first implementation that returns something ends the call.

        :param hook_name: the hook.
        :param timer: adds each implementation's seconds under ``(plugin name, hook name)``.
        :return: that result, or ``None``.
        """
        return self._call(hook_name, kwargs, "first", None, timer)

    def _call(
        self, hook_name: str, kwargs: dict[str, Any], mode: str, expected: type | None, timer: Timer | None, chain: str = ""
    ) -> Any:
        """The one loop over a hook's implementations behind :meth:`call_chain`, :meth:`call_each` and :meth:`call_first`.

        An error an implementation raises carries where it came from (``rlcore_where``, read by
        :func:`where_failed`): the plugin and the hook.
        """
        impls = getattr(self.hook, hook_name).get_hookimpls()
        teardowns: list[Any] = []
        collected: list[tuple[str, Any]] = []
        result: Any = None
        error: BaseException | None = None
        first_error: BaseException | None = None  # (mode "every": raised once every implementation ran)
        clock = time.perf_counter
        try:
            for impl in reversed(impls):
                args = [kwargs[a] for a in impl.argnames]
                tic = clock() if timer is not None else 0.0
                try:
                    if impl.hookwrapper or impl.wrapper:
                        gen = impl.function(*args)
                        next(gen)
                        teardowns.append((impl, gen, tic))
                        continue
                    out = impl.function(*args)
                except BaseException as err:
                    _mark(err, self, impl.plugin_name, f"at {hook_name}")
                    if mode != "every":
                        raise
                    first_error = first_error or err
                    continue
                finally:
                    if timer is not None:
                        timer[(impl.plugin_name, hook_name)] = timer.get((impl.plugin_name, hook_name), 0.0) + clock() - tic
                if out is None:
                    continue
                if expected is not None and not isinstance(out, expected):
                    wrong = TypeError(f"returned {_a(type(out).__name__)}; expected {_a(expected.__name__)} or None")
                    _mark(wrong, self, impl.plugin_name, f"at {hook_name}")
                    raise wrong
                if mode == "chain":
                    kwargs[chain] = out
                elif mode in ("each", "every"):
                    collected.append((impl.plugin_name, out))
                else:
                    result = out
                    break
            if first_error is not None:
                raise first_error
            if mode != "first":
                result = kwargs[chain] if mode == "chain" else [out for _, out in collected]
        except BaseException as err:  # re-raised below unless a wrapper handles it
            error = err
        plain = result
        for impl, gen, _ in reversed(teardowns):
            tic = clock() if timer is not None else 0.0
            inner = result
            result, error = _teardown(impl, gen, result, error)
            if mode == "chain" and error is None and result is None:  # a wrapper that returns nothing leaves the data as it is
                result = inner
            if error is not None:
                _mark(error, self, impl.plugin_name, f"at {hook_name}")
            if timer is not None:
                timer[(impl.plugin_name, hook_name)] = timer.get((impl.plugin_name, hook_name), 0.0) + clock() - tic
        if error is not None:
            raise error
        if mode == "each":  # a wrapper that replaced the list of results answers for all of them
            return collected if result is plain else [("wrappers", out) for out in result or []]
        return result


#: seconds spent, by ``(plugin name, hook name)``
Timer = dict[tuple[str, str], float]


def _entry_name(info: PluginInfo) -> str:
    """The entry-point name of a plugin (its :attr:`PluginInfo.name` without the ``" (distribution)"`` of a clash)."""
    return info.name.removesuffix(f" ({info.distribution})")


def _mark(error: BaseException, pm: PluginManager, plugin: str | None, doing: str) -> None:
    """Note on ``error`` which plugin raised it doing what (``at rl_post_steps``, ``making hook 'x'``; the innermost one).

    The kernel's stand-ins (``rlcore.loss_module``, ``rlcore.ops.post_steps``, ...) and ``plugin=None`` (code the loop
    calls outside hooks: the loss module, the envs) give way to the plugin whose code raised it, from its traceback.
    """
    if getattr(error, "rlcore_where", None) is None and not isinstance(error, (KeyboardInterrupt, SystemExit)):
        label = _label(pm, plugin) if plugin is not None else None
        if plugin is None or plugin.startswith(f"{PROJECT}."):
            label = _raised_in(pm, error) or label
        if label is not None:
            with contextlib.suppress(AttributeError):  # an exception type without a __dict__
                error.rlcore_where = f"{label} {doing}".strip()  # type: ignore[attr-defined]


def _raised_in(pm: PluginManager, error: BaseException) -> str | None:
    """``plugin 'x' (rl-plugin-x) in module.function``: the innermost frame of ``error``'s traceback in a plugin's code.

    A module several installed entry points share is named by its distribution (``rl-plugin-x in ...``).
    """
    owners: dict[str, list[str]] = {}  # a plugin's module -> the names it is registered under
    for name, plugin in pm.list_name_plugin():
        module = plugin.__name__ if inspect.ismodule(plugin) else getattr(plugin if inspect.isclass(plugin) else type(plugin), "__module__", "")
        if module.partition(".")[0] not in (PROJECT, "builtins"):
            owners.setdefault(module, []).append(name)
    found = None
    traceback = error.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        module = frame.f_globals.get("__name__", "")
        owner = max((m for m in owners if module == m or module.startswith(f"{m}.")), key=len, default=None)
        if owner is not None:
            installed = [n for n in owners[owner] if n in pm.infos and pm.infos[n].distribution]
            names = installed or owners[owner]
            label = _label(pm, names[0]) if len(names) == 1 or not installed else pm.infos[names[0]].distribution
            found = f"{label} in {module}.{getattr(frame.f_code, 'co_qualname', frame.f_code.co_name)}"
        traceback = traceback.tb_next
    return found


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: ``an int``, ``a str``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _label(pm: PluginManager, plugin: str) -> str:
    """``plugin 'x' (rl-plugin-x)``: a plugin as messages name it."""
    info = pm.infos.get(plugin)
    dist = f" ({info.distribution})" if info is not None and info.distribution else ""
    return f"plugin {plugin!r}{dist}"


def _commands_added(plugin: Any, pm: PluginManager) -> list[str]:
    """What ``plugin``'s ``rl_register_commands`` adds to the kernel's ``rlctl``: new commands, and
    options of existing ones (``eval --video``)."""
    from ._cli import make_cli

    cli = make_cli(pm)
    before = {name: {p.name for p in command.params} for name, command in cli.commands.items()}
    plugin.rl_register_commands(cli=cli)
    added = [name for name in cli.commands if name not in before]
    for name, params in before.items():
        added += [f"{name} --{p.name.replace('_', '-')}" for p in cli.commands[name].params if p.name not in params]
    return sorted(added)


def _teardown(impl: Any, gen: Any, result: Any, error: BaseException | None) -> tuple[Any, BaseException | None]:
    """Resume one wrapper after the inner calls, as pluggy does."""
    if impl.hookwrapper:  # old style: receives a Result
        outcome = pluggy.Result(result, error)
        try:
            gen.send(outcome)
        except StopIteration:
            pass
        else:
            raise RuntimeError(f"hook wrapper {impl.plugin_name} of a data hook yielded twice")
        return (outcome._result, outcome._exception)
    try:
        if error is not None:
            gen.throw(error)
        else:
            gen.send(result)
    except StopIteration as stop:
        return stop.value, None
    except BaseException as err:
        return None, err
    raise RuntimeError(f"wrapper {impl.plugin_name} of a data hook yielded twice")


_ENTRY_POINTS: list[metadata.EntryPoint] | None = None


def _entry_points() -> list[metadata.EntryPoint]:
    global _ENTRY_POINTS
    if _ENTRY_POINTS is None:
        _ENTRY_POINTS = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    return _ENTRY_POINTS


def where_failed(error: BaseException) -> str:
    """``"plugin 'x' (rl-plugin-x) at rl_post_steps: "`` when the trainer traced ``error`` to a plugin, else ``""``."""
    where = getattr(error, "rlcore_where", None)
    return f"{where}: " if where else ""


def get_plugin_manager(only: Iterable[str] | None = None, block: Iterable[str] = ()) -> PluginManager:
    """A new plugin manager with the installed plugins loaded.

    :param only: restrict third-party plugins to these names (default: ``RLCORE_PLUGINS``).
    :param block: names never to load.
    """
    return PluginManager(only=only, block=block)
