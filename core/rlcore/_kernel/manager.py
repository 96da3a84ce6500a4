"""Plugin discovery through the ``rlcore.plugins`` entry points, and the plugin manager.

The manager is pluggy's, with what rl-core adds around it: each discovered plugin's status, the
registries of named factories, the one calling style pluggy has not (a data hook's chain), and the
plugin to blame for an error, read from its traceback.
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import functools
import inspect
import json
import os
import re
import sys
import traceback
import types
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from importlib import metadata, resources
from typing import Any, TypeVar

import pluggy

from .. import hookspecs
from .._markers import PROJECT
from ..hookspecs import REGISTRIES
from .deadline import plugin_timeout, within
from .errors import ConfigError, PluginError, one_line, shown, valid_choices
from .registry import collect

ENTRY_POINT_GROUP = "rlcore.plugins"
ENV_PLUGINS = "RLCORE_PLUGINS"
CORE_DISTRIBUTION = "rl-core"
#: What a function named after a hook, without ``@hookimpl``, implements it with (pytest's rule for ``pytest_`` names).
E = TypeVar("E", bound=BaseException)
_PLAIN_IMPL = {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": False, "trylast": False, "specname": None}


@functools.cache
def first_party_data() -> dict[str, Any]:
    """``rlcore/first_party.json``: who provides the first-party names, so that a missing capability names what to
    install (data, not kernel code; a test keeps it equal to what the first-party plugins register).

    ``plugins``: the entry-point names of the first-party distributions (``rl-plugin-<name>``), which a third
    party's entry point never takes from them; ``provides``: ``{kind: {name: distribution or builtin}}``.
    """
    data: dict[str, Any] = json.loads(resources.files("rlcore").joinpath("first_party.json").read_text(encoding="utf-8"))
    return data


def install_hint(kind: str, name: str) -> str | None:
    """The distribution (or builtin plugin) that provides ``name`` of registry ``kind``, by ``first_party.json``."""
    provider: str | None = first_party_data()["provides"].get(kind, {}).get(name)
    return provider


def first_party(name: str, distribution: str) -> bool:
    """Whether the entry point ``name`` of ``distribution`` is rl-core's own: a builtin, or a first-party plugin."""
    return distribution == CORE_DISTRIBUTION or (name in first_party_data()["plugins"] and distribution == f"rl-plugin-{name}")


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
    def entry_name(self) -> str:
        """The entry-point name (:attr:`name` without the ``" (distribution)"`` it gets when another plugin has the name)."""
        return self.name.removesuffix(f" ({self.distribution})")

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
        #: the third-party plugins to load (``None``: every one)
        self.only = set(only) if only is not None else parse_names(os.environ.get(ENV_PLUGINS))
        #: the plugins never to load
        self.block = set(block)
        self._registries: dict[str, dict[str, tuple[str, Any]]] = {}
        #: the plugins already warned about (once each)
        self.warned: set[str] = set()
        self._callers: dict[str, tuple[list[pluggy.HookImpl], pluggy.HookCaller]] = {}  # see _split
        #: what each call of the manager's own calling styles runs in (the profiler times their dispatch as ``hook calls``)
        self.around_call: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
        if discover:
            self.load_entrypoints()

    # ------------------------------------------------------------------ discovery
    def _wanted(self, name: str, dist: str) -> bool:
        if {name, dist} & self.block:
            return False
        if dist == CORE_DISTRIBUTION or self.only is None:
            return True
        return bool({name, dist} & self.only)

    def load_entrypoints(self) -> None:
        """Import and register every wanted ``rlcore.plugins`` entry point, recording each status.

        Two distributions may declare the same entry-point name: a wanted one takes it before a
        blocked one, and rl-core's own before a third party's, whose status then says so.
        """

        def order(ep: metadata.EntryPoint) -> tuple[bool, str, bool, bool]:
            dist = ep.dist.name if ep.dist else "?"
            return dist != CORE_DISTRIBUTION, ep.name, not self._wanted(ep.name, dist), not first_party(ep.name, dist)

        seconds = plugin_timeout()
        for ep in sorted(_installed(tuple(sys.path)), key=order):
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
                plugin = within(ep.load, seconds)
            except BaseException as err:
                if isinstance(err, KeyboardInterrupt):
                    raise
                info.status = f"error: import failed: {one_line(err)}"
                continue
            self.add_plugin(plugin, ep.name, info)

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        """pluggy's reading of ``@hookimpl``; as in pytest, a function named ``rl_...`` implements a hook without it too
        (so that a misspelt name is reported, not ignored)."""
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith("rl_") and inspect.isroutine(getattr(plugin, name, None)):
            opts = dict(_PLAIN_IMPL)  # type: ignore[assignment]
        return opts

    def add_plugin(self, plugin: Any, name: str, info: PluginInfo | None = None) -> bool:
        """Register ``plugin`` and validate it; a failure is recorded in its status, never raised.

        :return: whether it is registered.
        """
        info = info or self.infos.setdefault(name, PluginInfo(name, "", "", repr(plugin)))
        try:
            registered = self.register(plugin, name)
        except Exception as err:  # pluggy's validation errors and anything a plugin's attributes raise
            info.status = f"error: {_unknown_arguments(err) or one_line(err)}"
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
        other = PluginManager(only=self.only, block=self.block, discover=False)
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

    # ------------------------------------------------------------------ registries
    def registry(self, kind: str) -> dict[str, tuple[str, Any]]:
        """``{name: (plugin name, factory)}`` for one registry kind (see :data:`rlcore.hookspecs.REGISTRIES`)."""
        if kind not in self._registries:
            broken: list[tuple[str, str]] = []
            found = collect(getattr(self.hook, REGISTRIES[kind]), kind, lambda plugin, message: broken.append((plugin, message)), plugin_timeout())
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
            self.warned.add(plugin)
            warnings.warn(f"plugin {plugin!r} ({info.distribution or '?'}) is not used: {message}", stacklevel=4)
        return registered

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
        provider = install_hint(kind, name)
        for info in self.infos.values():
            if provider in (info.distribution, info.name) or info.name == name:
                needs = f"{where}{singular} {name!r} needs plugin {info.entry_name!r} ({info.distribution})"
                if info.status == "blocked":
                    raise PluginError(f"{needs}, which is blocked")
                if not info.ok:
                    raise PluginError(f"{needs}, which is broken: {info.status[7:]}")
        hint = f"; install {provider} for it" if provider and provider.startswith("rl-plugin-") else ""
        failed = [i for i in self.infos.values() if i.status.startswith(f"error: {REGISTRIES[kind]} ")]
        if failed and not hint:
            hint = "; " + "; ".join(f"plugin {i.name!r} ({i.distribution or '?'}) could not register: {i.status[7:]}" for i in failed)
        unloaded = [
            f"{i.entry_name} ({i.distribution})" for i in self.infos.values() if i.status == "blocked" and not first_party(i.entry_name, i.distribution)
        ]
        if unloaded and not hint:  # (what they provide is not known without loading them)
            hint = f"; installed but not loaded in this run (--plugin, --no-plugin, RLCORE_PLUGINS): {', '.join(unloaded)}"
        choices = valid_choices(sorted(n for n in registry if "*" not in n), name) or "none loaded"
        patterns = [n for n in registry if "*" in n]
        if patterns:
            choices += f", or a name of the form {' or '.join(patterns)}"
        raise ConfigError(f"{where}unknown {singular} {shown(name)} (valid choices: {choices}){hint}")

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
                _marked(err, self, plugin, doing)
                raise
            raise PluginError(f"{_label(self, plugin)} {doing}: needs the module {err.name!r}, which is not installed") from None
        except BaseException as err:
            _marked(err, self, plugin, doing)
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

    # ------------------------------------------------------------------ calling
    def register(self, plugin: Any, name: str | None = None) -> str | None:
        """pluggy's ``register``; what the manager derived from the registrations is derived again."""
        self._callers.clear()
        return super().register(plugin, name)

    def unregister(self, plugin: Any = None, name: str | None = None) -> Any:
        """pluggy's ``unregister``; what the manager derived from the registrations is derived again."""
        self._callers.clear()
        return super().unregister(plugin, name)

    def call_chain(self, hook_name: str, expected: type, **kwargs: Any) -> Any:
        """Call a data hook so that each implementation receives the previous one's ``batch`` (a chain).

        :param hook_name: the data hook.
        :param expected: the type an implementation may return besides ``None`` (a ``TypeError`` naming it otherwise).
        :return: the last output that was not ``None``, or the input (or what a wrapper made of it).
        """

        def chain(impl: pluggy.HookImpl, out: Any) -> None:
            kwargs["batch"] = out

        return self._call_in_turn(hook_name, expected, kwargs, chain)

    def call_collecting(self, hook_name: str, expected: type, **kwargs: Any) -> list[tuple[str | None, Any]]:
        """Call a hook whose results the trainer takes one by one (a logging hook, ``rl_optimizer``), each with its plugin.

        A wrapper receives the list of results, as from pluggy's own call, and may return another list.

        :param hook_name: the hook.
        :param expected: the type an implementation may return besides ``None`` (a ``TypeError`` naming it otherwise).
        :return: ``(plugin name, result)`` of each result (the plugin ``None`` for one a wrapper added).
        """
        named: dict[int, str] = {}
        values: list[Any] = []

        def collect(impl: pluggy.HookImpl, out: Any) -> None:
            named[id(out)] = impl.plugin_name
            values.append(out)

        out = self._call_in_turn(hook_name, expected, kwargs, collect, values)
        for value in out:
            if id(value) not in named and not isinstance(value, expected):
                raise _marked(_wrong_type(value, expected), self, None, f"at {hook_name}")
        return [(named.get(id(value)), value) for value in out]

    def _call_in_turn(
        self, hook_name: str, expected: type, kwargs: dict[str, Any], take: Callable[[pluggy.HookImpl, Any], None], results: Any = None
    ) -> Any:
        """pluggy's call of ``hook_name`` with its wrappers around one function that runs the plain implementations in
        pluggy's order, each result that is not ``None`` checked and handed to ``take`` as it comes: the calling style
        pluggy has not, for the hooks whose results the trainer chains (data hooks) or takes with their plugin (their
        specs are ``firstresult``, so that a wrapper receives one value: the batch, or the list of results).

        :param results: what the function returns to the wrappers (the list ``take`` fills); default the chained ``batch``.
        :return: what the call returned (a wrapper may return another value).
        """
        plain, wrappers = self._split(hook_name)

        def in_turn() -> Any:
            for impl in plain:
                out = impl.function(*[kwargs[name] for name in impl.argnames])
                if out is not None:
                    if not isinstance(out, expected):
                        raise _marked(_wrong_type(out, expected), self, impl.plugin_name, f"at {hook_name}")
                    take(impl, out)
            return kwargs["batch"] if results is None else results

        with self.around_call():
            out = wrappers.call_extra([in_turn], kwargs)
        if results is None:
            return kwargs["batch"] if out is None else out
        return results if out is None else out

    def _split(self, hook_name: str) -> tuple[list[pluggy.HookImpl], pluggy.HookCaller]:
        """The plain implementations of a hook in call order, and a caller of its wrappers alone (kept until the next registration)."""
        if hook_name not in self._callers:
            impls = getattr(self.hook, hook_name).get_hookimpls()
            plain = [impl for impl in reversed(impls) if not (impl.wrapper or impl.hookwrapper)]
            self._callers[hook_name] = (plain, self.subset_hook_caller(hook_name, {impl.plugin for impl in plain}))
        return self._callers[hook_name]

    def call_every(self, hook_name: str, **kwargs: Any) -> None:
        """Call every implementation of a hook, even after one raised (``rl_shutdown``: each plugin cleans up its own).

        pluggy's call, made again over the implementations that have not run yet after each error.

        :raises BaseException: the first error an implementation raised, once all have run.
        """
        done: set[Any] = set()
        first: BaseException | None = None
        while True:
            try:
                self.subset_hook_caller(hook_name, done)(**kwargs)
                break
            except BaseException as err:
                first = first or err
                failed = self.blame(err)
                order = list(reversed(getattr(self.hook, hook_name).get_hookimpls()))
                if failed not in order:
                    break
                done |= {impl.plugin for impl in order[: order.index(failed) + 1]}  # it, and those pluggy called before it
        if first is not None:
            raise first

    def returned_by(self, plugin: str | None, hook_name: str, error: E) -> E:
        """``error``, about what ``plugin``'s implementation of ``hook_name`` returned (a value no logger takes), noted so."""
        return _marked(error, self, plugin, f"at {hook_name}")

    def blame(self, error: BaseException) -> pluggy.HookImpl | None:
        """Note on ``error`` which plugin raised it (read back by :func:`where_failed`), from its traceback: the hook
        implementation it went through, else the innermost frame of a plugin's own code (the loss module's forward,
        an env's step), unless something closer to it was noted already.

        :return: the hook implementation it went through, if any.
        """
        found = self._hook_in(frame for frame, _ in traceback.walk_tb(error.__traceback__))
        if found is None:
            _marked(error, self, None, "")
            return None
        impl, hook_name = found
        _marked(error, self, impl.plugin_name, f"at {hook_name}")
        return impl

    def running(self, frame: types.FrameType | None) -> str:
        """``"hook 'x' of plugin 'y' (rl-plugin-y) at rl_post_optim"``: the plugin's hook that the stack of ``frame`` (a
        thread's innermost frame, ``sys._current_frames()``) is in, outermost first; ``""`` outside any."""
        found = self._hook_in(reversed([f for f, _ in traceback.walk_stack(frame)])) if frame is not None else None
        return f"{_label(self, found[0].plugin_name)} at {found[1]}" if found is not None else ""

    def _hook_in(self, frames: Iterable[types.FrameType]) -> tuple[pluggy.HookImpl, str] | None:
        """The first of ``frames`` that runs a hook implementation: ``(implementation, hook name)``; a plain one before a
        wrapper (pluggy throws an implementation's error into the wrappers around it, which puts them first)."""
        codes: dict[Any, list[tuple[pluggy.HookImpl, str]]] = {}
        for hook_name, caller in vars(self.hook).items():
            for impl in caller.get_hookimpls():
                function = getattr(impl.function, "__func__", impl.function)
                codes.setdefault(getattr(function, "__code__", None), []).append((impl, hook_name))
        found = [
            (impl, hook_name)
            for frame in frames
            for impl, hook_name in codes.get(frame.f_code, ())
            if getattr(impl.function, "__self__", None) in (None, frame.f_locals.get("self"))
        ]
        return min(found, key=lambda match: match[0].wrapper or match[0].hookwrapper, default=None)


def _marked(error: E, pm: PluginManager, plugin: str | None, doing: str) -> E:
    """``error``, noted with which plugin raised it doing what (``at rl_post_steps``, ``making hook 'x'``), unless noted already
    (the innermost note stays).

    The kernel's stand-ins (``rlcore.loss_module``, an op's ``rlcore.op...``) and ``plugin=None`` (code the loop calls outside
    hooks: the loss module, the envs) give way to the plugin whose code raised it, from its traceback.
    """
    if getattr(error, "rlcore_where", None) is None and not isinstance(error, SystemExit):  # (a KeyboardInterrupt too: where it stopped a hook)
        label = _label(pm, plugin) if plugin is not None else None
        if plugin is None or plugin.startswith(f"{PROJECT}."):
            label = _raised_in(pm, error) or label
        if label is not None:
            with contextlib.suppress(AttributeError):  # an exception type without a __dict__
                error.rlcore_where = f"{label} {doing}".strip()  # type: ignore[attr-defined]
    return error


def _wrong_type(out: Any, expected: type) -> TypeError:
    return TypeError(f"returned {_a(type(out).__name__)}; expected {_a(expected.__name__)} or None")


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
    for frame, _ in traceback.walk_tb(error.__traceback__):
        module = frame.f_globals.get("__name__", "")
        owner = max((m for m in owners if module == m or module.startswith(f"{m}.")), key=len, default=None)
        if owner is not None:
            installed = [n for n in owners[owner] if n in pm.infos and pm.infos[n].distribution]
            names = installed or owners[owner]
            label = _label(pm, names[0]) if len(names) == 1 or not installed else pm.infos[names[0]].distribution
            found = f"{label} in {module}.{getattr(frame.f_code, 'co_qualname', frame.f_code.co_name)}"
    return found


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: ``an int``, ``a str``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _label(pm: PluginManager, plugin: str) -> str:
    """``plugin 'x' (rl-plugin-x)``: a plugin as messages name it; a hook of the config's ``hooks`` section (registered
    as ``hooks.<name>``) as ``hook 'name' of plugin 'x' (rl-plugin-x)``."""
    section, _, name = plugin.partition(".")
    provider = pm.provider("hooks", name) if section == "hooks" and name else None
    if provider is not None:
        return f"hook {name!r} of {_label(pm, provider[0])}"
    info = pm.infos.get(plugin)
    dist = f" ({info.distribution})" if info is not None and info.distribution else ""
    return f"plugin {plugin!r}{dist}"


@functools.lru_cache(maxsize=4)
def _installed(path: tuple[str, ...]) -> list[metadata.EntryPoint]:
    """The ``rlcore.plugins`` entry points of the distributions on ``path`` (read once per ``sys.path``: a test
    that puts a site on it, and takes it off, finds its plugins, then no longer)."""
    return list(metadata.entry_points(group=ENTRY_POINT_GROUP))


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
