"""The run config: one YAML file, sections named for the parts of a run, validated against the defaults."""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml

from .._kernel.errors import ConfigError, first_line, shown, valid_choices
from .._kernel.manager import PluginManager, get_plugin_manager
from .._kernel.options import REQUIRED, ImportPath, Range, import_object, options_of, validate_options
from ..hookspecs import LIFECYCLE_HOOKS, LOOP_HOOKS, REGISTRIES
from .devices import auto_device, check_device
from .envs import check_env, checked_wrappers

SECTIONS = ("env", "collector", "algo", "optim", "trainer", "loggers", "hooks", "checkpoint")
#: Sections that map plugin names to their options (``null`` options remove a default entry).
NAMED_SECTIONS = ("loggers", "hooks")
#: The key of the resolved config that records the plugin distributions (and versions) of the run.
PLUGINS_KEY = "plugins"

Positive = Annotated[int, Range(ge=1)]
NonNegative = Annotated[int, Range(ge=0)]
#: A count of frames (10^12 frames, thirty years at a thousand frames a second, is beyond any run)
Frames = Annotated[int, Range(ge=1, le=10**12)]


@dataclass
class EnvSection:
    """``env``: what the run trains on.

    :param id: a Gymnasium id, or an env registered by a plugin (``rl_register_envs``).
    :param num_envs: copies stepped side by side.
    :param vectorization: a vector-env backend: ``sync`` (one process), ``async`` (a process per env),
        or one registered by a plugin.
    :param kwargs: keyword arguments of the env (``render_mode``, ``max_episode_steps``, ...).
    :param wrappers: ``{name: options}`` of vector-env wrappers, applied in order.
    """

    id: str = "CartPole-v1"
    num_envs: Positive = 4
    vectorization: str = "sync"
    kwargs: dict[str, Any] = field(default_factory=dict)
    wrappers: dict[str, dict[str, Any] | None] = field(default_factory=dict)


@dataclass
class CollectorSection:
    """``collector``: how batches are collected.

    :param name: the collector: ``local`` (the run's envs stepped in the training process), or one
        registered by a plugin (``ray``); the section's other keys are that collector's own options.
    :param frames_per_batch: frames per batch, a multiple of ``env.num_envs``.
    """

    name: str = "local"
    frames_per_batch: Annotated[int, Range(ge=1, le=10**8)] = 512


#: The arguments the kernel gives a collector factory itself (not options of the ``collector`` section).
COLLECTOR_ARGUMENTS = ("env", "policy", "frames_per_batch", "device", "make_env")


#: the optimizers ``optim.name`` names without an import path, and their classes' paths
OPTIMIZERS = {"adam": "torch.optim.Adam", "adamw": "torch.optim.AdamW", "sgd": "torch.optim.SGD", "rmsprop": "torch.optim.RMSprop"}


@dataclass
class OptimSection:
    """``optim``: the optimizer of the loss module's parameters.

    The section's other keys are the optimizer's own keyword arguments, checked against its signature
    (``betas``, ``amsgrad``, ``momentum``, ``nesterov``, ...).

    :param name: the optimizer: ``adam``, ``adamw``, ``sgd``, ``rmsprop``, or the import path of a
        ``torch.optim.Optimizer`` class (``torch.optim.NAdam``, ``mypackage.optim:Lion``).
    :param lr: the learning rate.
    :param eps: the epsilon of the optimizers that take one (Adam, AdamW, RMSprop).
    :param weight_decay: L2 penalty (decoupled for AdamW).
    :param lr_schedule: how the learning rate moves from ``lr`` to ``lr_end`` over ``trainer.total_frames``.
    :param lr_end: the last learning rate of a schedule.
    """

    name: str = "adam"
    lr: Annotated[float, Range(gt=0)] = 3e-4
    eps: Annotated[float, Range(gt=0)] = 1e-8
    weight_decay: Annotated[float, Range(ge=0)] = 0.0
    lr_schedule: Literal["constant", "linear", "cosine"] = "constant"
    lr_end: Annotated[float, Range(ge=0)] = 0.0


@dataclass
class TrainerSection:
    """``trainer``: the loop, with the seed Trainer's parameter names.

    :param total_frames: stop once this many frames are collected.
    :param frame_skip: frames each collected step stands for.
    :param optim_steps_per_batch: optimisation steps per batch; ``null``: as the loss module defines (its ``optim_steps_per_batch``), else 1.
    :param clip_grad_norm: clip gradients by norm (true) or by value (false).
    :param clip_norm: the clipping threshold; ``null``: no clipping.
    :param seed: seeds python, numpy, torch and the envs; ``null``: drawn at random and recorded.
    :param log_interval: frames between two logged values of one metric.
    :param save_trainer_interval: frames between checkpoints.
    :param progress_bar: show a progress bar on a terminal.
    :param device: where the loss module runs (``cpu``, ``cuda``, ``cuda:1``, ``mps``); ``auto``: CUDA when this machine
        has it, else the CPU (the resolved config records which).
    :param num_threads: torch threads on CPU; ``null``: torch's default.
    :param logger_timeout: seconds a logger may take to write; one that takes longer is dropped.
    :param logger_setup_timeout: seconds a logger may take to set up (a tracking server's first answer); one that
        takes longer is dropped, and the run, once trained, exits 1 saying so.
    :param max_batches: also stop after this many batches (the old torchrl ``max_iters``); ``null``: no limit.
    :param max_episodes: also stop once this many episodes have ended; ``null``: no limit.
    :param profile: time every hook of every plugin and the loop's parts; print a table at the end (``--profile``).
    """

    total_frames: Frames = 100_000
    frame_skip: Annotated[int, Range(ge=1, le=1000)] = 1
    optim_steps_per_batch: Annotated[int, Range(ge=1, le=10**6)] | None = None
    clip_grad_norm: bool = True
    clip_norm: Annotated[float, Range(gt=0)] | None = None
    seed: Annotated[int, Range(ge=0, le=2**32 - 1)] | None = None
    log_interval: Annotated[int, Range(ge=0, le=10**12)] = 1
    save_trainer_interval: Frames = 10_000
    progress_bar: bool = True
    device: str = "cpu"
    num_threads: Annotated[int, Range(ge=1, le=1024)] | None = 1
    logger_timeout: Annotated[float, Range(gt=0)] = 10.0
    logger_setup_timeout: Annotated[float, Range(gt=0)] = 300.0
    max_batches: Positive | None = None
    max_episodes: Positive | None = None
    profile: bool = False


@dataclass
class CheckpointSection:
    """``checkpoint``: where and how often the run's state is saved.

    :param backend: ``torch`` or a backend registered by a plugin (``torchsnapshot``); env ``CKPT_BACKEND``.
    :param keep_last: how many checkpoints to keep.
    """

    backend: str = "torch"
    keep_last: Positive = 3


#: The kernel's sections with a fixed set of keys, each declared once.
SECTION_TYPES: dict[str, type] = {
    "env": EnvSection,
    "collector": CollectorSection,
    "optim": OptimSection,
    "trainer": TrainerSection,
    "checkpoint": CheckpointSection,
}

_NAMED_DEFAULTS: dict[str, dict[str, Any]] = {"algo": {"name": "ppo"}, "loggers": {"csv": {}, "console": {}}, "hooks": {}}
#: Every section's defaults, before the algorithm's own.
KERNEL_DEFAULTS: dict[str, dict[str, Any]] = {
    name: dataclasses.asdict(SECTION_TYPES[name]()) if name in SECTION_TYPES else _NAMED_DEFAULTS[name] for name in SECTIONS
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


def yaml_loader() -> type:
    """A YAML safe loader that reads numbers as people write them: ``3e-4``, ``1e6`` and ``1_000_000``, and
    refuses a key given twice in one mapping (PyYAML keeps the last silently: a second ``env:`` section would
    replace the first).

    PyYAML follows YAML 1.1, where a float needs a dot (``3.0e-4``) and ``1e6`` is a string.
    """

    class Loader(yaml.SafeLoader):
        def construct_document(self, node: Any) -> Any:
            _checked(node, {})  # on the document as written, before merge keys (<<) are expanded
            return super().construct_document(node)

    exponent = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", exponent, list("-+0123456789"))
    return Loader


#: The largest config file read.
MAX_BYTES = 2**20
#: The most values a config file may stand for, its aliases expanded (an "alias bomb" of a few hundred bytes stands for billions).
MAX_VALUES = 100_000


def _checked(node: Any, sizes: dict[int, int]) -> int:
    """How many values ``node`` stands for, its aliases expanded (each node counted once: ``sizes``); a YAML error at the
    second of two equal scalar keys of a mapping (same tag and text), or past :data:`MAX_VALUES`."""
    if id(node) in sizes:  # an alias of a node already counted
        return sizes[id(node)]
    size = 1
    if isinstance(node, yaml.MappingNode):
        first: dict[tuple[str, str], Any] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                mark = first.setdefault((key.tag, key.value), key.start_mark)
                if mark is not key.start_mark:
                    problem = f"duplicate key {shown(key.value)} (first at line {mark.line + 1})"
                    raise yaml.constructor.ConstructorError(None, None, problem, key.start_mark)
            size += _checked(key, sizes) + _checked(value, sizes)
    elif isinstance(node, yaml.SequenceNode):
        size += sum(_checked(item, sizes) for item in node.value)
    if size > MAX_VALUES:
        raise yaml.constructor.ConstructorError(None, None, f"it stands for more than {MAX_VALUES} values (aliases expanded)", node.start_mark)
    sizes[id(node)] = size
    return size


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML config file.

    :raises ConfigError: when it is missing, unparsable or not a mapping of known sections.
    """

    path = Path(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)  # (not read whole: /dev/zero, or a log given by mistake)
        if len(raw) > MAX_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_BYTES // 2**20} MiB, which no config is")
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read config file ({getattr(err, 'strerror', None) or err})") from None
    try:
        data = yaml.load(text, Loader=yaml_loader()) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}: not valid YAML{where}: {getattr(err, 'problem', None) or err}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deep to be a config") from None
    except ValueError as err:  # a number beyond Python's conversion limit (4300 digits)
        raise ConfigError(f"{path}: not valid YAML: {first_line(err)[:120]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections ({', '.join(SECTIONS)})")
    return data


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``--set a.b=value`` into a key path and a YAML-parsed value (``3e-4`` is a number)."""

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {shown(text)}: expected KEY=VALUE, e.g. trainer.total_frames=50000")
    try:
        value = yaml.load(raw, Loader=yaml_loader()) if raw.strip() else ""
    except (yaml.YAMLError, RecursionError, ValueError):  # (not YAML, nested too deep, a number of 5,000 digits: the text)
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
                raise ConfigError(f"--set {shown(text)}: {shown(part)} is not a section")
            node = child
        node[path[-1]] = value
    return config


def resolve_config(user: Mapping[str, Any], plugin_manager: PluginManager) -> dict[str, Any]:
    """Merge kernel defaults, the algorithm's defaults, its preset for the env and ``user``; check every key.

    Each value is checked against its declared type and range (the kernel's sections, the
    algorithm's options, each logger's, hook's, wrapper's options) and converted to it. The
    result records the plugin distributions that take part (``plugins``); a ``plugins`` record
    in ``user`` that differs from what is installed is warned about, once per distribution.

    :param user: the user's config (from a file and ``--set``).
    :param plugin_manager: where algorithms, loggers, hooks, wrappers and backends are looked up.
    :raises ConfigError: on the first bad key, value or plugin name.
    :raises PluginError: when the plugin that provides a name is blocked or broken.
    """
    for section in user:
        if section not in (*SECTIONS, PLUGINS_KEY):
            raise ConfigError(f"unknown section {shown(section)} (valid choices: {', '.join(SECTIONS)})")
        if not isinstance(user[section], Mapping) and user[section] is not None:
            raise ConfigError(f"{section}: expected a mapping, got {shown(user[section])}")

    for kind in REGISTRIES:  # a plugin whose registry hook fails takes no part in the run, whichever registry it is
        plugin_manager.registry(kind)
    recorded = user.get(PLUGINS_KEY) or {}
    _check_recorded(recorded)  # first: a name the config uses may be unknown because its plugin is gone
    user = {k: v for k, v in user.items() if v is not None and k != PLUGINS_KEY}
    name = user.get("algo", {}).get("name", KERNEL_DEFAULTS["algo"]["name"])
    if not isinstance(name, str):
        raise ConfigError(f"algo.name: expected a string, got {shown(name)}")
    algorithm = plugin_manager.factory("algorithms", name, key="algo.name")
    backend = os.environ.get("CKPT_BACKEND")
    defaults = merge(KERNEL_DEFAULTS, {"checkpoint": {"backend": backend}} if backend else {})
    defaults = merge(merge(defaults, {"algo": algorithm.option_defaults()}), algorithm.defaults)
    env_id = user.get("env", {}).get("id") or defaults["env"]["id"]
    if not isinstance(env_id, str):
        raise ConfigError(f"env.id: expected a string, got {shown(env_id)}")
    defaults = merge(defaults, algorithm.presets.get(env_id, {}))
    defaults["algo"]["name"] = name
    config = merge(defaults, user)
    user_env = user.get("env")
    if isinstance(user_env, Mapping) and isinstance(user_env.get("wrappers"), Mapping):
        # a pipeline, in order: the user's replaces the defaults', or only takes wrappers out of it (NAME: null)
        wanted = copy.deepcopy(user_env["wrappers"])
        only_removes = bool(wanted) and all(options is None for options in wanted.values())
        pipeline = (defaults.get("env", {}).get("wrappers") or {}) if only_removes else wanted
        config["env"]["wrappers"] = {name: options for name, options in pipeline.items() if wanted.get(name, options) is not None}
    for section, declared in SECTION_TYPES.items():
        if section == "collector":
            config[section] = _collector_section(config[section], plugin_manager)
            continue
        if section == "optim":
            config[section] = _optim_section(config[section])
            continue
        config[section] = validate_options(section, declared, config[section])
    if config["trainer"]["device"] == "auto":
        config["trainer"]["device"] = auto_device()
    options = {k: v for k, v in config["algo"].items() if k != "name"}
    config["algo"] = {"name": name, **validate_options("algo", algorithm.option_types(), options)}
    for section in NAMED_SECTIONS:  # an entry set to null stays, as null: it removes a default one for good
        if not isinstance(config[section], Mapping):
            raise ConfigError(f"{section}: expected a mapping of names to options, got {shown(config[section])}")
        for entry, values in config[section].items():
            if values is not None:
                factory = plugin_manager.factory(section, entry, key=section)
                config[section][entry] = validate_options(f"{section}.{entry}", factory, values, ("exp_name", "log_dir"), defaults=True)
    for hook in algorithm.needs_hooks:
        if config["hooks"].get(hook) is None:

            default = yaml.safe_dump(dict(defaults["hooks"].get(hook) or {}), default_flow_style=True, sort_keys=False).strip()
            raise ConfigError(f"hooks.{hook}: {name} cannot train without it (its default: {default})")

    config["env"]["wrappers"] = checked_wrappers(config["env"]["wrappers"], plugin_manager)
    vectorization = plugin_manager.factory("vectorizations", config["env"]["vectorization"], key="env.vectorization")
    registered = plugin_manager.registry("envs").get(config["env"]["id"])
    if registered is not None and not getattr(vectorization, "own_kwargs", False):  # an env of rl_register_envs: its options, all, as a hook's
        config["env"]["kwargs"] = validate_options("env.kwargs", registered[1], config["env"]["kwargs"], defaults=True)
    source = "CKPT_BACKEND" if backend and config["checkpoint"]["backend"] == backend and "backend" not in user.get("checkpoint", {}) else None
    plugin_manager.factory("checkpoint_backends", config["checkpoint"]["backend"], key=source or "checkpoint.backend")
    config[PLUGINS_KEY] = participants(config, plugin_manager)
    return config


def _collector_section(values: Mapping[str, Any], plugin_manager: PluginManager) -> dict[str, Any]:
    """The ``collector`` section, checked: the kernel's keys (``name``, ``frames_per_batch``), then the named
    collector's own options (its factory's keyword parameters), their defaults filled in.

    :raises ConfigError: for an unknown collector, an unknown key (naming the valid ones) or a bad value.
    """

    kernel_keys = [f.name for f in dataclasses.fields(CollectorSection)]
    kernel = validate_options("collector", CollectorSection, {k: v for k, v in values.items() if k in kernel_keys})
    factory = plugin_manager.factory("collectors", kernel["name"], key="collector.name")
    declared, open_ended = options_of(factory)
    declared = {n: o for n, o in declared.items() if n not in COLLECTOR_ARGUMENTS}
    given = {k: v for k, v in values.items() if k not in kernel_keys}
    unknown = [k for k in given if k not in declared]
    if unknown and not open_ended:
        raise ConfigError(f"unknown key collector.{unknown[0]} (valid choices: {valid_choices([*kernel_keys, *declared], unknown[0])})")
    defaults = {n: o.default for n, o in declared.items() if o.default is not REQUIRED}
    return {**kernel, **validate_options("collector", factory, {**defaults, **given}, COLLECTOR_ARGUMENTS)}


def _optim_section(values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``optim`` section, checked: rl-core's keys, then the optimizer's own (its signature's keyword parameters).

    :raises ConfigError: for an unknown optimizer, a key it does not take (naming those it does) or a bad value.
    """
    kernel_keys = [f.name for f in dataclasses.fields(OptimSection)]
    kernel = validate_options("optim", OptimSection, {k: v for k, v in values.items() if k in kernel_keys})
    own = {k: v for k, v in values.items() if k not in kernel_keys}
    if kernel["name"] in OPTIMIZERS and not own:
        return kernel
    checked = optimizer_options(optimizer_class(kernel["name"]), {**kernel, **own})
    return {**kernel, **{k: checked[k] for k in own}}


#: the ``optim`` section's keys that are rl-core's, not the optimizer's
SCHEDULE_KEYS = ("name", "lr_schedule", "lr_end")


def optimizer_class(name: str) -> type[Any]:
    """The optimizer class ``optim.name`` names: ``adam``, ``adamw``, ``sgd``, ``rmsprop``, or an import path
    (``torch.optim.NAdam``, ``mypackage.optim:Lion``) of a ``torch.optim.Optimizer``.

    :raises ConfigError: for an unknown name or a path that does not import an optimizer class.
    """
    import torch  # (lazy: a config of a named optimizer is checked without torch)

    path = OPTIMIZERS.get(name, name)
    choices = f"valid choices: {', '.join(OPTIMIZERS)}, or an optimizer's import path such as torch.optim.NAdam"
    if path == name and "." not in name and ":" not in name:
        raise ConfigError(f"optim.name: unknown optimizer {shown(name)} ({choices})")
    try:
        cls = import_object(path)
    except (ImportError, AttributeError, ValueError) as err:
        raise ConfigError(f"optim.name: cannot import {shown(name)} ({first_line(err)}; {choices})") from None
    if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)):
        raise ConfigError(f"optim.name: {shown(name)} is not a torch.optim.Optimizer class ({choices})")
    return cls


def optimizer_options(cls: type[Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """The optimizer's own keyword arguments among ``options`` (the ``optim`` section without rl-core's keys), checked
    against the optimizer's signature: ``lr``, ``eps`` and ``weight_decay`` where it takes them, and any other it takes
    (``betas``, ``momentum``, ``amsgrad``, ``nesterov``, ...).

    :raises ConfigError: naming a key the optimizer does not take (with those it does), or a bad value.
    """
    declared, _ = options_of(cls)
    given = {k: v for k, v in options.items() if k not in SCHEDULE_KEYS}
    taken = {k: v for k, v in given.items() if k in declared or k not in ("eps", "weight_decay")}  # (SGD has no eps: the section's default is left out)
    return validate_options("optim", cls, taken, ("params",))


def check_config(config: Mapping[str, Any], plugin_manager: PluginManager) -> None:
    """The checks of a resolved config that look beyond one key: the env and its kwargs, the device,
    the batch shape. Run before anything is built or written.

    :raises ConfigError: naming the key and the valid choices.
    """

    env, collector = config["env"], config["collector"]
    if collector["frames_per_batch"] % env["num_envs"]:
        raise ConfigError(
            f"collector.frames_per_batch: {collector['frames_per_batch']} is not a multiple of env.num_envs={env['num_envs']}"
        )
    backend = plugin_manager.factory("vectorizations", env["vectorization"], key="env.vectorization")
    check_env(env["id"], {} if getattr(backend, "own_kwargs", False) else env["kwargs"], plugin_manager)
    check_device(config["trainer"]["device"], "trainer.device")


def participants(config: Mapping[str, Any], plugin_manager: PluginManager) -> dict[str, str]:
    """``{distribution: version}`` of the plugins that take part in a run of ``config``.

    Those that provide a name the config uses (algorithm, loggers, hooks, env, wrappers, backend)
    and those that implement a loop or lifecycle hook (they take part in every run).
    """

    used = [("algorithms", config["algo"]["name"]), ("checkpoint_backends", config["checkpoint"]["backend"]), ("envs", config["env"]["id"])]
    used += [("collectors", config["collector"]["name"])]
    used += [(section, n) for section in NAMED_SECTIONS for n, o in config[section].items() if o is not None]
    used += [("env_wrappers", n) for n in config["env"]["wrappers"]]
    names = {provided[0] for kind, n in used if isinstance(n, str) and (provided := plugin_manager.provider(kind, n)) is not None}
    hooks = set(LOOP_HOOKS) | set(LIFECYCLE_HOOKS)
    names |= {info.name for info in plugin_manager.infos.values() if info.ok and hooks & set(info.hooks)}
    found = {plugin_manager.infos[n].distribution: plugin_manager.infos[n].version for n in names if n in plugin_manager.infos}
    return dict(sorted((d, v) for d, v in found.items() if d))


def _check_recorded(recorded: Any) -> None:
    """Warn, one line each, about recorded plugin distributions that are missing or of another version."""

    if not isinstance(recorded, Mapping):
        raise ConfigError(f"{PLUGINS_KEY}: expected a mapping of distributions to versions, got {shown(recorded)}")
    for dist, version in recorded.items():
        try:
            installed = metadata.version(str(dist))
        except metadata.PackageNotFoundError:
            warnings.warn(f"the config was written with {dist} {version}, which is not installed", stacklevel=3)
            continue
        if str(version) != installed:
            warnings.warn(f"the config was written with {dist} {version}; {installed} is installed", stacklevel=3)


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: Iterable[str] = (),
    plugin_manager: PluginManager | None = None,
    **sections: Mapping[str, Any],
) -> dict[str, Any]:
    """Read, override and resolve a config.

    :param path: a YAML file, or ``None`` for the defaults.
    :param overrides: ``KEY=VALUE`` strings, as ``--set`` takes them.
    :param plugin_manager: the plugins to resolve names with (default: the installed ones).
    :param sections: sections merged over the file before the overrides (``algo={"name": "a2c"}``).
    :return: the resolved config.
    """

    user = read_config_file(path) if path is not None else {}
    user = merge(user, sections)
    apply_overrides(user, overrides)
    return resolve_config(user, plugin_manager or get_plugin_manager())


def train_config(
    path: str | os.PathLike[str] | None = None,
    overrides: Iterable[str] = (),
    *,
    algo: str | None = None,
    env: str | None = None,
    frames: str | int | None = None,
    seed: str | int | None = None,
    loggers: Iterable[str] = (),
    profile: bool = False,
    plugin_manager: PluginManager | None = None,
) -> dict[str, Any]:
    """The config ``rlctl train`` trains with: ``path``, its shortcuts and ``--set`` ``overrides``.

    :param algo: ``--algo``, ``algo.name``.
    :param env: ``--env``, ``env.id``.
    :param frames: ``--frames``, ``trainer.total_frames``, read as ``--set`` reads values (``1e6`` works).
    :param seed: ``--seed``, ``trainer.seed``, read as ``--set`` reads values.
    :param loggers: ``--logger`` names, each added with its default options.
    :param profile: ``--profile``, ``trainer.profile``.
    :return: the resolved config (see :func:`load_config`).
    """
    sections: dict[str, Any] = {}
    for section, key, value in (("algo", "name", algo), ("env", "id", env)):
        if value is not None:
            sections[section] = {key: value}
    if loggers:
        sections["loggers"] = {name: {} for name in loggers}
    numbers = {"trainer.total_frames": frames, "trainer.seed": seed, "trainer.profile": "true" if profile else None}
    shortcuts = tuple(f"{key}={value}" for key, value in numbers.items() if value is not None)
    return load_config(path, overrides=(*shortcuts, *overrides), plugin_manager=plugin_manager, **sections)


def dump_config(config: Mapping[str, Any]) -> str:
    """The config as YAML text, sections in their documented order."""

    class Dumper(yaml.SafeDumper):
        """Block style, except for lists of plain values (``hidden_sizes: [64, 64]``)."""

    def represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> Any:
        flow = all(not isinstance(item, (dict, list)) for item in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    Dumper.add_representer(list, represent_list)
    Dumper.add_representer(ImportPath, Dumper.represent_str)  # (a callable named by its import path)
    Dumper.add_representer(tuple, represent_list)
    ordered = {s: config[s] for s in (*SECTIONS, PLUGINS_KEY) if s in config}
    return yaml.dump(ordered, Dumper=Dumper, sort_keys=False, default_flow_style=False)


def save_config(config: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``config`` as YAML to ``path``, atomically (a crash leaves the old file or the new one).

    :param config: a config, e.g. from :func:`load_config`.
    :param path: the file to write.
    :return: ``path``.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(dump_config(config), encoding="utf-8")
    os.replace(tmp, path)
    return path


def default_config(algo: str, env: str | None = None, plugin_manager: PluginManager | None = None) -> dict[str, Any]:
    """The resolved default config of algorithm ``algo`` (with its preset for ``env``, if it has one).

    What ``rlctl config show ALGO [--env ENV]`` prints.

    :param algo: an algorithm's name.
    :param env: an env id.
    :param plugin_manager: the plugins (default: the installed ones).
    """
    sections: dict[str, Any] = {"algo": {"name": algo}}
    if env is not None:
        sections["env"] = {"id": env}
    return load_config(plugin_manager=plugin_manager, **sections)


#: Keys that count collected steps, which :func:`correct_for_frame_skip` divides (of TorchRL's list, by key name).
FRAME_KEYS = ("frames_per_batch", "record_frames", "init_env_steps", "noops")


def correct_for_frame_skip(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``config`` whose counts of collected steps are divided by ``trainer.frame_skip`` (TorchRL's helper of the same name).

    Every key named in :data:`FRAME_KEYS`, in any section (``collector.frames_per_batch``, a hook's
    ``record_frames``, ...), becomes ``value // frame_skip``, so that numbers written in env frames
    count steps. The counts on the trainer's clock, ``total_frames``, ``init_random_frames`` and the
    exploration's ``*annealing_frames``, stay: rl-core's trainer counts every collected step as
    ``frame_skip`` frames (TorchRL's collector counts steps, so its helper divides them too).

    :param config: a config with ``trainer.frame_skip``.
    """
    skip = int(config.get("trainer", {}).get("frame_skip", 1))

    def divide(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: v // skip if k in FRAME_KEYS and isinstance(v, int) and not isinstance(v, bool) else divide(v) for k, v in node.items()}
        return copy.deepcopy(node)

    return divide(config)


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"algo": {"lr": 1}}`` -> ``{"algo.lr": 1}`` (lists stay whole)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
