"""Typed options: one validator for the kernel's config sections and every plugin's options.

Options are declared once, as the fields of a dataclass or the keyword parameters of a factory,
with their types and defaults. A range is an annotation::

    @dataclass
    class MyHookOptions:
        interval: Annotated[int, Range(ge=1)] = 1000
        scale: float | None = None

:func:`validate_options` checks a mapping of values against such a declaration and returns the
values converted to the declared types (``1e6`` for an integer is ``1000000``); the first bad
value raises :class:`rlcore.ConfigError` with one line naming the key and what was expected.
A config file names a callable by its import path, ``module:name`` (:class:`ImportPath`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import os
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Annotated, Any, Literal, Union

from .contracts import OWN_ENTRIES
from .errors import ConfigError, shown, valid_choices

#: The default of an option that has none (a required option).
REQUIRED: Any = inspect.Parameter.empty


@dataclass(frozen=True)
class Range:
    """Bounds of a number option, used as ``Annotated[int, Range(ge=1)]``.

    :param ge: the value is at least this.
    :param gt: the value is above this.
    :param le: the value is at most this.
    :param lt: the value is below this.
    """

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def __contains__(self, value: float) -> bool:
        return not (
            (self.ge is not None and value < self.ge)
            or (self.gt is not None and value <= self.gt)
            or (self.le is not None and value > self.le)
            or (self.lt is not None and value >= self.lt)
        )

    def __str__(self) -> str:
        parts = [
            f"{sign} {_number(bound)}"
            for sign, bound in ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
            if bound is not None
        ]
        return " and ".join(parts)


@dataclass(frozen=True)
class InsideRunDir:
    """Marks a string option as a path relative to the run directory that must stay inside it:
    ``Annotated[str, InsideRunDir()]`` (:data:`RunPath`). Absolute paths, ``..`` and rl-core's own
    entries (``config.yaml``, ``.rlcore-run``, ``checkpoints``) are refused."""

    def __contains__(self, value: str) -> bool:
        path = PurePath(value)
        named = bool(value.strip()) and bool(path.parts)  # ("", " ", "." and "./" name no entry of it)
        return named and not path.is_absolute() and ".." not in path.parts and path.parts[0] not in OWN_ENTRIES


#: A path inside the run directory, relative to it (``metrics.csv``, ``videos/eval``).
RunPath = Annotated[str, InsideRunDir()]


def run_path(run_dir: str | os.PathLike[str], relative: str | os.PathLike[str], key: str) -> Path:
    """``run_dir/relative`` for a :data:`RunPath` option, refused if it is none or if it would leave ``run_dir``
    (through a link too).

    :param run_dir: the run directory.
    :param relative: a path relative to it.
    :param key: the config key that names it, for the message.
    :raises ConfigError: for an absolute path, one that climbs out (``../x``) or one of rl-core's own entries.
    """
    check_value(key, str(relative), RunPath)
    directory = Path(run_dir)
    resolved = directory.resolve()
    target = (resolved / relative).resolve()
    if not target.is_relative_to(resolved) or target == resolved:  # through a link, or the directory itself
        raise ConfigError(f"{key}: {shown(str(relative))} is not a path inside the run directory")
    return directory / relative


@dataclass(frozen=True)
class Option:
    """One declared option.

    :param name: its key.
    :param type: its annotation, resolved (``Any`` when it has none or it cannot be resolved).
    :param default: its default, or :data:`REQUIRED`.
    """

    name: str
    type: Any
    default: Any = REQUIRED


def options_of(target: Any) -> tuple[dict[str, Option], bool]:
    """The options that ``target`` declares: a dataclass's fields, or a callable's keyword parameters.

    :param target: a dataclass type, a function or a class.
    :return: ``{name: Option}`` and whether ``target`` also takes any other keyword (``**kwargs``).
    """
    if dataclasses.is_dataclass(target) and isinstance(target, type):
        hints = _hints(target)
        found = {}
        for f in dataclasses.fields(target):
            if not f.init:
                continue
            default = f.default if f.default is not dataclasses.MISSING else REQUIRED
            if f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            found[f.name] = Option(f.name, hints.get(f.name, Any), default)
        return found, False
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return {}, True
    function = vars(target).get("__init__", target) if isinstance(target, type) else target
    found, open_ended = {}, False
    for name, param in signature.parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            open_ended = True
        elif param.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            found[name] = Option(name, _resolve(param.annotation, function), param.default)
    return found, open_ended


def validate_options(
    key: str,
    target: Any,
    values: Mapping[str, Any],
    skip: Iterable[str] = (),
    *,
    defaults: bool = False,
) -> dict[str, Any]:
    """Check ``values`` against the options ``target`` declares and convert them to the declared types.

    :param key: the config key of the whole (``hooks.evaluation``), for messages.
    :param target: a dataclass type or a callable (see :func:`options_of`).
    :param values: ``{option: value}``.
    :param skip: parameters that the caller fills in itself (``exp_name``, ``env``, ...).
    :param defaults: also give the defaults of the options ``values`` leaves out, in the declared order (those
        that are plain YAML values: what a run's ``config.yaml`` records, so that it pins them).
    :return: the converted values.
    :raises ConfigError: for an unknown option, a missing required one, or a bad value.
    """
    if not isinstance(values, Mapping):
        raise ConfigError(f"{key}: expected a mapping of options, got {shown(values)}")
    declared, open_ended = options_of(target)
    skipped = set(skip)
    declared = {n: o for n, o in declared.items() if n not in skipped}
    out: dict[str, Any] = {}
    for name, value in values.items():
        option = declared.get(name)
        if option is None:
            if open_ended:
                out[name] = value
                continue
            raise ConfigError(f"unknown key {key}.{name} (valid choices: {valid_choices(declared, name) or 'none'})")
        out[name] = check_value(f"{key}.{name}", value, option.type)
    missing = [n for n, o in declared.items() if o.default is REQUIRED and n not in values]
    if missing:
        raise ConfigError(f"{key}.{missing[0]}: required (no default)")
    if defaults:  # in the declared order; the extras an open-ended target takes after them
        written = {n: out.get(n, o.default) for n, o in declared.items() if n in out or (o.default is not REQUIRED and _plain(o.default))}
        out = {**written, **out}
    return out


def validate_fields(options: Any, key: str, declared: type | None = None) -> None:
    """Check the fields of a dataclass instance with :func:`validate_options` and store their converted values
    (``1e4`` for an integer becomes ``10000``): what an options dataclass calls in ``__post_init__``.

    :param options: the dataclass instance.
    :param key: the config key of the whole (``hooks.evaluation``), for messages.
    :param declared: the dataclass whose fields are checked; default: the nearest dataclass in the
        instance's class hierarchy (a hook class may subclass its options without being a dataclass).
    :raises ConfigError: naming ``key.<option>``, what was expected, and the value.
    """
    if declared is None:
        declared = next(c for c in type(options).__mro__ if "__dataclass_fields__" in vars(c))
    values = {f.name: getattr(options, f.name) for f in dataclasses.fields(declared)}
    for name, value in validate_options(key, declared, values).items():
        setattr(options, name, value)


def hook_factory(name: str, options: type, load: Callable[[], Callable[..., Any]], python_only: Iterable[str] = ()) -> Callable[..., Any]:
    """An ``rl_register_hooks`` factory declared by an options dataclass, that imports its hook only when called.

    It carries the signature and docstring of ``options`` less the options only Python can give
    (objects), so the kernel checks a config's option names and types, and ``rlctl config show`` writes
    them out, without importing the hook's module; called from Python, it checks its keyword arguments
    the same way (one line naming ``hooks.<name>.<option>``), and takes the Python-only ones too.

    :param name: the hook's name in the config's ``hooks`` section.
    :param options: the options dataclass.
    :param load: returns the hook class (or any callable taking the options), importing it.
    :param python_only: options a config cannot give: out of the factory's signature, handed on to the hook as they are.
    """
    left_out = set(python_only)

    def factory(**kwargs: Any) -> Any:
        objects = {k: v for k, v in kwargs.items() if k in left_out}
        checked = validate_options(f"hooks.{name}", factory, {k: v for k, v in kwargs.items() if k not in left_out})
        return load()(**checked, **objects)

    signature, hints = inspect.signature(options), _hints(options)  # (the annotations evaluated in the options' module)
    parameters = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(p.name, p.annotation))
        for p in signature.parameters.values()
        if p.name not in left_out
    ]
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = options.__doc__
    factory.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return factory


def _plain(value: Any) -> bool:
    """Whether ``value`` is a plain YAML value (``None``, a bool, number or string, or lists and mappings of them)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(item) for item in value)
    return isinstance(value, Mapping) and all(isinstance(k, str) and _plain(v) for k, v in value.items())


def check_value(key: str, value: Any, annotation: Any) -> Any:
    """``value`` converted to ``annotation``, or a :class:`rlcore.ConfigError` naming ``key``.

    Integers accept integral floats (``1e6``); numbers must be finite; ``X | None`` accepts ``null``.

    :param key: the config key, for the message.
    :param value: the value read.
    :param annotation: the declared type.
    """
    ok, converted = _convert(value, annotation)
    if ok:
        return converted
    origin, args = _origin(annotation), typing.get_args(annotation)
    if isinstance(value, Mapping) and len(args) == 2 and (origin in (dict, Mapping) or _is_mapping_origin(origin)):
        for name, item in value.items():  # name the entry that is wrong
            if not _convert(name, args[0])[0]:
                choices = f" (valid choices: {', '.join(map(str, _literal_choices(args[0])))})" if _origin(args[0]) is Literal else ""
                raise ConfigError(f"unknown key {key}.{name}{choices}")
            check_value(f"{key}.{name}", item, args[1])
    if _origin(annotation) is Literal or _is_literal_in_union(annotation):
        choices = valid_choices(_literal_choices(annotation), value)
        raise ConfigError(f"{key}: unknown value {shown(value)} (valid choices: {choices})")
    raise ConfigError(f"{key}: expected {describe(annotation)}, got {shown(value)}")


def describe(annotation: Any) -> str:
    """What a value of ``annotation`` is, in words: ``an integer of at least 1``, ``a number or null``."""
    origin, args = _origin(annotation), typing.get_args(annotation)
    if annotation is Any or annotation is object:
        return "any value"
    if origin is typing.Annotated:
        if any(isinstance(m, InsideRunDir) for m in annotation.__metadata__):
            return "a relative path inside the run directory, not config.yaml, .rlcore-run or checkpoints"
        ranges = [str(m) for m in annotation.__metadata__ if isinstance(m, Range)]
        return f"{describe(args[0])}{' ' + ' and '.join(ranges) if ranges else ''}"
    if origin is Union:
        names = [describe(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or null" if type(None) in args else "")
    if origin is Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        if not args or args[0] is Any or args[0] is Ellipsis:
            return "a list"
        item = describe(args[0])
        return f"a list of {_plural(item)}" if " or " not in item else f"a list, each item {item}"
    if origin in (dict, Mapping) or annotation in (dict, Mapping):
        keys, values = typing.get_args(annotation) if len(typing.get_args(annotation)) == 2 else (Any, Any)
        if _origin(keys) is not Literal:
            return "a mapping"
        return f"a mapping of ({', '.join(map(str, typing.get_args(keys)))}) to {_plural(describe(values))}"
    words: dict[Any, str] = {bool: "true or false", int: "an integer", float: "a number", str: "a string", type(None): "null"}
    if annotation in words:
        return words[annotation]
    if origin is Callable or annotation is Callable or origin is typing.Callable:
        return "a callable (its import path, module:name)"
    if annotation in (os.PathLike,):
        return "a path"
    return f"a {getattr(annotation, '__name__', annotation)}"


# ----------------------------------------------------------------------------- internals


def import_module(name: str) -> types.ModuleType:
    """The module ``name``, found as ``python -m`` finds it: modules of the working directory too.

    :raises ImportError: when it cannot be imported.
    """
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    return importlib.import_module(name)


def import_object(path: str) -> Any:
    """The object at ``path``, ``module:name`` or ``package.module.name``, its module found as ``python -m``
    finds modules: the working directory's too (a config's wrapper class or function beside it).

    :param path: the import path.
    :raises ImportError: when the module cannot be imported.
    :raises AttributeError: when the module has no such name.
    :raises ValueError: for a path without a module or a name.
    """
    module, colon, name = path.partition(":")
    if not colon:
        module, _, name = path.rpartition(".")
    if not module or not name:
        raise ValueError(f"{path!r} is not an import path (module:name)")
    return getattr(import_module(module), name)


class ImportPath(str):
    """A callable option given in a config by its import path, ``module:name``: a string there, the object when called.

    It stays a string in the config (``config.yaml`` holds the path, a resumed run imports it again)
    and pickles as one; calling it calls the object, imported on the first call.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = self.__dict__.get("target")
        if target is None:
            target = self.__dict__["target"] = import_object(self)
        return target(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        return ImportPath, (str(self),)


def _callable(value: Any) -> tuple[bool, Any]:
    """A callable as it stands, or a string ``module:name`` naming one, as an :class:`ImportPath`."""
    if callable(value):
        return True, value
    if not isinstance(value, str) or value.count(":") != 1:
        return False, None
    try:
        target = import_object(value)
    except Exception:  # whatever its module raises on import (a SyntaxError too): not a callable here
        return False, None
    return (True, ImportPath(value)) if callable(target) else (False, None)


def _numpy(value: Any, annotation: type) -> tuple[bool, Any]:
    """A value of a NumPy type: what a config holds for it (a number; for an array, numbers in lists too), or an instance."""
    import numpy as np  # (lazy: a config is checked without numpy until a plugin declares a NumPy option)

    def numbers(v: Any) -> bool:
        if isinstance(v, (list, tuple)):
            return all(numbers(item) for item in v)
        return isinstance(v, (int, float, np.number)) and not isinstance(v, bool)

    if isinstance(value, annotation):
        return True, value
    if issubclass(annotation, np.ndarray):
        return (True, value) if numbers(value) else (False, None)
    if issubclass(annotation, np.integer):
        return (True, value) if isinstance(value, int) and not isinstance(value, bool) else (False, None)
    if issubclass(annotation, np.number):
        return (True, value) if numbers(value) and not isinstance(value, (list, tuple)) else (False, None)
    return False, None


def _convert(value: Any, annotation: Any) -> tuple[bool, Any]:
    """``(True, converted)`` when ``value`` fits ``annotation``, else ``(False, None)``."""
    origin, args = _origin(annotation), typing.get_args(annotation)
    if annotation is Any or annotation is object or annotation is REQUIRED:
        return True, value
    if origin is typing.Annotated:
        ok, converted = _convert(value, args[0])
        if not ok:
            return False, None
        checks = (m for m in annotation.__metadata__ if isinstance(m, (Range, InsideRunDir)))
        in_range = all(converted in m for m in checks if converted is not None)
        return (True, converted) if in_range else (False, None)
    if origin is Union:
        if value is None:
            return (True, None) if type(None) in args else (False, None)
        for arg in args:
            if arg is type(None):
                continue
            ok, converted = _convert(value, arg)
            if ok:
                return True, converted
        return False, None
    if origin is Literal:
        return (True, value) if value in args and not (isinstance(value, bool) and True not in args) else (False, None)
    if annotation is type(None):
        return (True, None) if value is None else (False, None)
    if annotation is bool:
        return (True, value) if isinstance(value, bool) else (False, None)
    if annotation is int:
        if isinstance(value, bool):
            return False, None
        if isinstance(value, int):
            return True, value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return True, int(value)
        return False, None
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False, None
        return True, float(value)
    if annotation is str:
        return (True, value) if isinstance(value, str) else (False, None)
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return False, None
        if origin is tuple and args and args[-1] is not Ellipsis:  # a fixed-length tuple
            if len(args) != len(value):
                return False, None
            pairs = [_convert(v, a) for v, a in zip(value, args, strict=True)]
        else:
            pairs = [_convert(v, args[0] if args else Any) for v in value]
        if not all(ok for ok, _ in pairs):
            return False, None
        return True, [v for _, v in pairs]
    if origin in (dict, Mapping) or annotation in (dict, Mapping) or _is_mapping_origin(origin):
        if not isinstance(value, Mapping):
            return False, None
        key_type, value_type = args if len(args) == 2 else (Any, Any)
        if not all(_convert(k, key_type)[0] for k in value):
            return False, None
        converted = {k: _convert(v, value_type) for k, v in value.items()}
        if not all(ok for ok, _ in converted.values()):
            return False, None
        return True, {k: v for k, (_, v) in converted.items()}
    if annotation is Callable or origin is typing.Callable or _is_callable_origin(origin):
        return _callable(value)
    if annotation is os.PathLike:
        return (True, value) if isinstance(value, (str, os.PathLike)) else (False, None)
    if isinstance(annotation, type) and annotation.__module__ == "numpy":
        return _numpy(value, annotation)
    if isinstance(annotation, type):
        return (True, value) if isinstance(value, annotation) else (False, None)
    return True, value  # an annotation this checker does not know (a TypeVar, a Protocol, ...)


def _origin(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    return Union if origin is types.UnionType else origin


def _is_mapping_origin(origin: Any) -> bool:
    return origin in (Mapping, MutableMapping)


def _is_callable_origin(origin: Any) -> bool:
    return origin is Callable


def _is_literal_in_union(annotation: Any) -> bool:
    return _origin(annotation) is Union and any(_origin(a) is Literal for a in typing.get_args(annotation))


def _literal_choices(annotation: Any) -> list[Any]:
    if _origin(annotation) is Literal:
        return list(typing.get_args(annotation))
    return [c for a in typing.get_args(annotation) if _origin(a) is Literal for c in typing.get_args(a)]


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception:
        module = sys.modules.get(cls.__module__)
        namespace = vars(module) if module else {}
        return {f.name: _resolve(f.type, None, namespace) for f in dataclasses.fields(cls)}


def _resolve(annotation: Any, function: Any, namespace: Mapping[str, Any] | None = None) -> Any:
    """An annotation, its string form (postponed evaluation) evaluated in the function's module; ``Any`` if that fails."""
    if annotation is inspect.Parameter.empty:
        return Any
    if not isinstance(annotation, str):
        return annotation
    if namespace is None:
        namespace = getattr(inspect.unwrap(function), "__globals__", {}) if function is not None else {}
    try:
        return eval(annotation, {"typing": typing, **namespace})
    except Exception:
        return Any


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _plural(words: str) -> str:
    for article in ("an ", "a "):
        if words.startswith(article):
            head, _, rest = words[len(article) :].partition(" ")
            return f"{head}s{' ' + rest if rest else ''}"
    return words


__all__ = ["REQUIRED", "ImportPath", "Option", "Range", "check_value", "describe", "import_module", "options_of", "validate_options"]
