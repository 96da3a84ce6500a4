"""``rlctl plugins new NAME --kind KIND``: scaffold a third-party plugin package that installs and passes its tests as generated.

The package ``rl-plugin-NAME/`` holds a light top module that registers one example of its kind (a hook,
an algorithm, an env or a logger) through the registry hook, the example itself in a submodule, a
README and tests written with rl-core's kit for plugin authors (:mod:`rlcore_testing`). The
templates are files of rl-core's package data: ``rlcore/templates/common/`` for every kind, then
``rlcore/templates/KIND/``. Their names and text are :class:`string.Template` strings (``$module``), so
the Python code in them needs no brace escaping, and every name ends with ``.tmpl`` so that no tool
takes a template for a module.
"""

from __future__ import annotations

import keyword
import re
import warnings
from collections.abc import Iterator
from importlib import metadata
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING

from .._kernel.errors import ConfigError
from .._kernel.manager import first_party_data

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

#: lowercase letters and digits in groups joined by single dashes, starting with a letter
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
DIST_PREFIX = "rl-plugin-"
VALID_FORM = "lowercase letters, digits and single dashes, starting with a letter (e.g. 'reward-stats')"

#: what a plugin package can be scaffolded for: the example it starts from, as its ``pyproject.toml`` describes it
KINDS = {
    "hook": "the $snake hook",
    "algorithm": "the $name algorithm",
    "env": "the env $env_id",
    "logger": "the $snake logger",
}
#: where the package ``rl-plugin-NAME/`` is, as :class:`string.Template` files (``$name``), in rl-core's package data:
#: ``common/`` and the kind's folder
TEMPLATES = "templates"
#: what ends every template file's name
TEMPLATE_SUFFIX = ".tmpl"


def _template_files(root: Traversable, prefix: str = "") -> Iterator[tuple[str, str]]:
    """``(relative path, text)`` of every template file under ``root``, the paths still holding placeholders."""
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            if entry.name != "__pycache__":
                yield from _template_files(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(TEMPLATE_SUFFIX):
            yield f"{prefix}{entry.name[: -len(TEMPLATE_SUFFIX)]}", entry.read_text(encoding="utf-8")


def check_name(name: str) -> None:
    """Check that ``name`` can name a plugin: ``rl-plugin-NAME`` and ``rl_plugin_NAME`` follow from it.

    :param name: the plugin's short name, e.g. ``reward-stats``.
    :raises ConfigError: a one-line message naming the valid form.
    """
    if name.startswith(DIST_PREFIX):
        raise ConfigError(f"invalid plugin name {name!r}: give it without the {DIST_PREFIX!r} prefix; use {VALID_FORM}")
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigError(f"invalid plugin name {name!r}: use {VALID_FORM}")
    if keyword.iskeyword(name.replace("-", "_")):
        raise ConfigError(f"invalid plugin name {name!r}: a Python keyword; use {VALID_FORM}")
    if name in first_party_data()["plugins"]:
        raise ConfigError(f"invalid plugin name {name!r}: rl-core's own {DIST_PREFIX}{name} has it; choose another")


def scaffold(name: str, directory: Path, kind: str = "hook") -> Path:
    """Write the package ``directory/rl-plugin-<name>/``, ready to ``pip install`` and test.

    :param name: the plugin's short name (lowercase letters, digits and dashes, starting with a
        letter); the entry point is ``name``, the module ``rl_plugin_<name with underscores>``; the
        example hook or logger is ``<name with underscores>``, the algorithm ``<name>``, the env
        ``<Name>-v0`` (``reward-stats``: ``RewardStats-v0``).
    :param directory: where the package directory is created (made if missing).
    :param kind: one of :data:`KINDS`: what the plugin provides.
    :return: the package directory.
    :raises ConfigError: for an invalid name or kind, or when the package directory already exists.
    """
    check_name(name)
    if kind not in KINDS:
        raise ConfigError(f"--kind: unknown kind {kind!r} (valid choices: {', '.join(KINDS)})")
    snake, camel = name.replace("-", "_"), "".join(part.capitalize() for part in name.split("-"))
    values = {
        "name": name,
        "dist": f"{DIST_PREFIX}{name}",
        "module": f"rl_plugin_{snake}",
        "snake": snake,
        "camel": camel,
        "cls": camel + {"hook": "Hook", "algorithm": "Loss", "env": "Env", "logger": "Logger"}[kind],
        "env_id": f"{camel}-v0",
        "core_version": ".".join(metadata.version("rl-core").split(".")[:2]),
    }
    values["summary"] = Template(KINDS[kind]).substitute(values)
    project = Path(directory) / values["dist"]
    if project.exists():
        raise ConfigError(f"{project} already exists; remove it or choose another NAME or --dir")
    try:
        installed = metadata.version(values["dist"])
    except metadata.PackageNotFoundError:
        pass
    else:  # (installing the new one would replace it: same distribution, entry point and module)
        warnings.warn(f"{values['dist']} {installed} is installed already; installing the new package replaces it", stacklevel=2)
    templates = files("rlcore").joinpath(TEMPLATES)
    for template_path, template in (*_template_files(templates.joinpath("common")), *_template_files(templates.joinpath(kind))):
        path = project / Template(template_path).substitute(values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(template).substitute(values), encoding="utf-8")
    return project


def next_steps(project: Path) -> str:
    """What to do after :func:`scaffold`, as ``rlctl plugins new`` prints it.

    :param project: the directory :func:`scaffold` returned.
    """
    return "\n".join(
        [
            f"created {project}",
            "next steps:",
            f"  cd {project}",
            '  pip install -e ".[test]"',
            "  pytest",
            "  rlctl plugins list",
        ]
    )


__all__ = ["KINDS", "check_name", "next_steps", "scaffold"]
