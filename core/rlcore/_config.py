"""The run config: one YAML file, sections named for the parts of a run, validated against the defaults."""

from __future__ import annotations

import copy
import inspect
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ._errors import ConfigError

CONFIG_FILE = "config.yaml"
SECTIONS = ("env", "collector", "algo", "optim", "trainer", "loggers", "hooks", "checkpoint")
#: Sections that map plugin names to their options (``null`` options remove a default entry).
NAMED_SECTIONS = ("loggers", "hooks")
OPTIMIZERS = ("adam", "adamw", "sgd", "rmsprop")
LR_SCHEDULES = ("constant", "linear", "cosine")

KERNEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "env": {"id": "CartPole-v1", "num_envs": 4, "vectorization": "sync", "kwargs": {}, "wrappers": {}},
    "collector": {"frames_per_batch": 512},
    "algo": {"name": "ppo"},
    "optim": {"name": "adam", "lr": 3e-4, "eps": 1e-8, "weight_decay": 0.0, "lr_schedule": "constant", "lr_end": 0.0},
    "trainer": {
        "total_frames": 100_000,
        "frame_skip": 1,
        "optim_steps_per_batch": None,
        "clip_grad_norm": True,
        "clip_norm": None,
        "seed": None,
        "log_interval": 1,
        "save_trainer_interval": 10_000,
        "progress_bar": True,
        "device": "cpu",
        "num_threads": 1,
    },
    "loggers": {"csv": {}, "console": {}},
    "hooks": {},
    "checkpoint": {"backend": "torch", "keep_last": 3},
}
#: Keys that also take ``null`` although their default is set.
NULLABLE = {("trainer", "num_threads")}
CHOICES = {
    ("optim", "name"): OPTIMIZERS,
    ("optim", "lr_schedule"): LR_SCHEDULES,
}


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``base`` with ``override`` merged in (mappings merge, anything else replaces)."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML config file.

    :raises ConfigError: when it is missing, unparsable or not a mapping of known sections.
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"{path}: cannot read config file ({err.strerror or err})") from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{where}: {getattr(err, 'problem', None) or err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections ({', '.join(SECTIONS)})")
    return data


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``--set a.b=value`` into a key path and a YAML-parsed value."""
    import yaml

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: expected KEY=VALUE, e.g. trainer.total_frames=50000")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key.strip().split("."), value


def apply_overrides(config: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply ``--set`` overrides to ``config`` in place and return it."""
    for text in overrides:
        path, value = parse_override(text)
        node = config
        for part in path[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            elif not isinstance(child, dict):
                raise ConfigError(f"--set {text!r}: {part!r} is not a section")
            node = child
        node[path[-1]] = value
    return config


def _type_error(key: str, default: Any, value: Any) -> str | None:
    if default is None:
        return None
    expected: tuple[type, ...]
    if isinstance(default, bool):
        expected, name = (bool,), "true or false"
    elif isinstance(default, int):
        expected, name = (int,), "an integer"
    elif isinstance(default, float):
        expected, name = (int, float), "a number"
    elif isinstance(default, str):
        expected, name = (str,), "a string"
    elif isinstance(default, Mapping):
        expected, name = (dict,), "a mapping"
    elif isinstance(default, (list, tuple)):
        expected, name = (list, tuple), "a list"
    else:
        return None
    if isinstance(value, bool) and bool not in expected or not isinstance(value, expected):
        return f"{key}: expected {name}, got {value!r}"
    return None


def _check_keys(section: str, values: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    for key, value in values.items():
        if key not in defaults:
            valid = ", ".join(sorted(defaults))
            raise ConfigError(f"unknown key {section}.{key} (valid choices: {valid})")
        nullable = (section, key) in NULLABLE or section == "algo"  # an algorithm's null means "off"
        error = None if value is None and nullable else _type_error(f"{section}.{key}", defaults[key], value)
        if error:
            raise ConfigError(error)
        choices = CHOICES.get((section, key))
        if choices and value not in choices:
            raise ConfigError(f"{section}.{key}: unknown value {value!r} (valid choices: {', '.join(choices)})")


def check_options(key: str, factory: Any, options: Mapping[str, Any], skip: Iterable[str] = ()) -> None:
    """Check ``options`` against the keyword parameters of ``factory``.

    :raises ConfigError: for an option the factory does not take.
    """
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    names = [n for n, p in params.items() if n not in set(skip) and p.kind is not inspect.Parameter.VAR_POSITIONAL]
    for option in options:
        if option not in names:
            raise ConfigError(f"unknown key {key}.{option} (valid choices: {', '.join(names) or 'none'})")


def resolve_config(user: Mapping[str, Any], plugin_manager: Any) -> dict[str, Any]:
    """Merge kernel defaults, the algorithm's defaults, its preset for the env and ``user``; validate every key.

    :param user: the user's config (from a file and ``--set``).
    :param plugin_manager: where algorithms, loggers, hooks, wrappers and backends are looked up.
    :raises ConfigError: on the first bad key, value or plugin name.
    :raises PluginError: when the plugin that provides a name is blocked or broken.
    """
    for section in user:
        if section not in SECTIONS:
            raise ConfigError(f"unknown section {section!r} (valid choices: {', '.join(SECTIONS)})")
        if not isinstance(user[section], Mapping) and user[section] is not None:
            raise ConfigError(f"{section}: expected a mapping, got {user[section]!r}")
    user = {k: v for k, v in user.items() if v is not None}
    name = user.get("algo", {}).get("name", KERNEL_DEFAULTS["algo"]["name"])
    if not isinstance(name, str):
        raise ConfigError(f"algo.name: expected a string, got {name!r}")
    algorithm = plugin_manager.factory("algorithms", name, key="algo.name")
    defaults = {"checkpoint": {"backend": os.environ.get("CKPT_BACKEND", "torch")}}
    defaults = merge(merge(KERNEL_DEFAULTS, defaults), algorithm.defaults)
    env_id = user.get("env", {}).get("id") or defaults["env"]["id"]
    defaults = merge(defaults, algorithm.presets.get(env_id, {}))
    defaults["algo"]["name"] = name
    config = merge(defaults, user)
    for section in SECTIONS:
        if section not in NAMED_SECTIONS:
            _check_keys(section, config[section], defaults[section])
    for section in NAMED_SECTIONS:  # an entry set to null stays, as null: it removes a default one for good
        for entry, options in config[section].items():
            if options is not None:
                _check_named(f"{section}.{entry}", plugin_manager.factory(section, entry, key=section), options, ("exp_name", "log_dir"))
    for entry, options in config["env"]["wrappers"].items():
        _check_named(f"env.wrappers.{entry}", plugin_manager.factory("env_wrappers", entry, key="env.wrappers"), options, ("env",))
    plugin_manager.factory("checkpoint_backends", config["checkpoint"]["backend"], key="checkpoint.backend")
    return config


def _check_named(key: str, factory: Any, options: Any, skip: Iterable[str]) -> None:
    if options is not None and not isinstance(options, Mapping):
        raise ConfigError(f"{key}: expected a mapping of options, got {options!r}")
    check_options(key, factory, options or {}, skip)


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: Iterable[str] = (),
    plugin_manager: Any = None,
    **sections: Mapping[str, Any],
) -> dict[str, Any]:
    """Read, override and resolve a config.

    :param path: a YAML file, or ``None`` for the defaults.
    :param overrides: ``KEY=VALUE`` strings, as ``--set`` takes them.
    :param plugin_manager: the plugins to resolve names with (default: the installed ones).
    :param sections: sections merged over the file before the overrides (``algo={"name": "a2c"}``).
    :return: the resolved config.
    """
    from ._plugins import get_plugin_manager

    user = read_config_file(path) if path is not None else {}
    user = merge(user, sections)
    apply_overrides(user, overrides)
    return resolve_config(user, plugin_manager or get_plugin_manager())


def dump_config(config: Mapping[str, Any]) -> str:
    """The config as YAML text, sections in their documented order."""
    import yaml

    class Dumper(yaml.SafeDumper):
        """Block style, except for lists of plain values (``hidden_sizes: [64, 64]``)."""

    def represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> Any:
        flow = all(not isinstance(item, (dict, list)) for item in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    Dumper.add_representer(list, represent_list)
    Dumper.add_representer(tuple, represent_list)
    ordered = {s: config[s] for s in SECTIONS if s in config}
    return yaml.dump(ordered, Dumper=Dumper, sort_keys=False, default_flow_style=False)


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"algo": {"lr": 1}}`` -> ``{"algo.lr": 1}`` (lists stay whole)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
