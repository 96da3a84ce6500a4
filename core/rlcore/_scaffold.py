"""``rlctl plugins new NAME``: scaffold a third-party plugin package that installs and passes its tests as generated.

The package ``rl-plugin-NAME/`` holds a light top module that registers one example hook through
``rl_register_hooks``, the hook itself (a :class:`rlcore.TrainerHookBase`) in a submodule, a
README and tests. The templates are :class:`string.Template` strings (``$name``), so the Python
code in them needs no brace escaping.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from string import Template

from ._errors import ConfigError

#: lowercase letters and digits in groups joined by single dashes, starting with a letter
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
DIST_PREFIX = "rl-plugin-"
VALID_FORM = "lowercase letters, digits and single dashes, starting with a letter (e.g. 'reward-stats')"

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "rl-core plugin: the $hook hook"
readme = "README.md"
requires-python = ">=3.10"
dependencies = [
    "rl-core>=$core_version",
]

[project.optional-dependencies]
test = ["pytest>=8"]

# how rl-core finds the plugin: the module that holds its hook implementations
[project.entry-points."rlcore.plugins"]
$name = "$module"

[tool.setuptools]
packages = ["$module"]

[tool.pytest.ini_options]
testpaths = ["tests"]
addopts = "-ra"
"""

_INIT = '''\
"""rl-core plugin ``$name``: the ``$hook`` hook.

Turn it on in a config's ``hooks`` section::

    hooks:
      $hook: {scale: 1.0}

``rlctl plugins list`` imports this module to show what it provides, so it stays light: the
hook class (and torch, which it needs) is imported only when the factory below is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcore import hookimpl

if TYPE_CHECKING:
    from ._hook import $cls

__version__ = "0.1.0"
__all__ = ["$hook", "rl_register_hooks"]


def $hook(scale: float = 1.0) -> $cls:
    """Create the ``$hook`` hook; its parameters are the options of ``hooks.$hook`` in a config.

    :param scale: multiplies every reward before it is added to the total.
    :return: the hook, ready for ``register(trainer, "$hook")``.
    """
    from ._hook import $cls

    return $cls(scale=scale)


@hookimpl
def rl_register_hooks() -> dict[str, Any]:
    """Contribute this plugin's hooks by name: the keys of a config's ``hooks`` section.

    rl-core calls a factory with the options of its config entry. Any other hook of
    ``rlcore.hookspecs`` is implemented the same way: a function of this module named for the
    hook, marked ``@hookimpl``, taking only the arguments it needs (``def rl_post_steps(trainer)``).
    """
    return {"$hook": $hook}
'''

_HOOK = '''\
"""The ``$hook`` hook: an example :class:`rlcore.TrainerHookBase` to start from.

It keeps the running total of the collected rewards and logs it as ``$hook/total_reward``.
Its state goes into every checkpoint, so a resumed run carries on with the total.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlcore import ConfigError, TrainerHookBase

if TYPE_CHECKING:
    from tensordict import TensorDictBase

    from rlcore import Trainer


class $cls(TrainerHookBase):
    """The running total of the collected rewards, logged as ``$hook/total_reward``.

    :param scale: multiplies every reward before it is added to the total.
    :raises rlcore.ConfigError: when ``scale`` is not a number.
    """

    def __init__(self, scale: float = 1.0) -> None:
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise ConfigError(f"hooks.$hook.scale: must be a number, got {scale!r}")
        self.scale = float(scale)
        self.total_reward = 0.0
        self.batches = 0

    def register(self, trainer: Trainer, name: str = "$hook") -> None:
        """Attach to ``trainer``: TorchRL-style ops at two hook points, and the state for checkpoints.

        :param trainer: the trainer to attach to.
        :param name: the key of this hook's state in checkpoints.
        """
        trainer.register_op("batch_process", self.process)
        trainer.register_op("post_steps_log", self.log)
        trainer.register_module(name, self)

    def process(self, batch: TensorDictBase) -> None:
        """Add the batch's rewards to the total (a data op: returning ``None`` keeps the batch).

        :param batch: a collected batch ``[envs, time]``.
        """
        self.total_reward += self.scale * float(batch["next", "reward"].sum())
        self.batches += 1

    def log(self, batch: TensorDictBase) -> dict[str, float]:
        """The values to log once the batch is done (a logging op).

        :param batch: the processed batch.
        :return: ``{name: value}``.
        """
        return {"$hook/total_reward": self.total_reward}

    def state_dict(self) -> dict[str, Any]:
        """The total and the batch count, as plain Python numbers (checkpoints load with ``weights_only=True``)."""
        return {"total_reward": self.total_reward, "batches": self.batches}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned.

        :param state_dict: a dict from :meth:`state_dict`.
        """
        self.total_reward = float(state_dict["total_reward"])
        self.batches = int(state_dict["batches"])
'''

_TEST = '''\
"""Tests of $dist: ``pip install -e ".[test]"``, then ``pytest``."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import torch
from tensordict import TensorDict
from torch import nn

import rlcore
from $module import $hook
from $module._hook import $cls


def test_discovered_through_its_entry_point() -> None:
    pm = rlcore.get_plugin_manager(only=["$name"])
    info = {i.name: i for i in pm.describe()}["$name"]
    assert info.status == "ok", info.status
    assert info.distribution == "$dist"
    assert info.provides == {"hooks": ["$hook"]}
    assert pm.factory("hooks", "$hook") is $hook


def test_listing_plugins_does_not_import_torch() -> None:
    code = "import sys, rlcore; rlcore.get_plugin_manager(only=['$name']).describe(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def make_batch(reward: float) -> TensorDict:
    """A batch of 2 envs x 3 steps whose rewards are all ``reward``."""
    return TensorDict(
        {"observation": torch.zeros(2, 3, 4), "next": {"reward": torch.full((2, 3, 1), reward)}},
        batch_size=[2, 3],
    )


def test_hook_adds_up_rewards_and_round_trips_its_state() -> None:
    hook = $hook(scale=2.0)
    assert isinstance(hook, $cls)
    hook.process(make_batch(1.0))
    hook.process(make_batch(0.5))
    assert hook.log(make_batch(0.0)) == {"$hook/total_reward": 18.0}
    restored = $hook(scale=2.0)
    restored.load_state_dict(hook.state_dict())
    assert restored.state_dict() == {"total_reward": 18.0, "batches": 2}


def test_a_bad_option_is_a_config_error() -> None:
    with pytest.raises(rlcore.ConfigError, match="hooks.$hook.scale"):
        $hook(scale="big")


class RecordingLogger(rlcore.Logger):
    """Keeps every logged scalar in memory."""

    def __init__(self) -> None:
        super().__init__(exp_name="test", log_dir=".")
        self.values: dict[str, list[float]] = {}

    def log_scalar(self, name: str, value: float, step: int) -> None:
        self.values.setdefault(name, []).append(value)


class ZeroLoss(nn.Module):
    """A loss module with nothing to learn: enough to drive the trainer's loop."""

    def forward(self, batch: Any) -> TensorDict:
        return TensorDict({"loss_zero": torch.zeros(())}, batch_size=[])


def test_hook_in_a_short_run() -> None:
    logger = RecordingLogger()
    trainer = rlcore.Trainer(
        collector=[make_batch(1.0)] * 3,  # any iterable of batches stands in for rlcore.Collector
        loss_module=ZeroLoss(),
        total_frames=18,
        log_interval=1,
        progress_bar=False,
        loggers=logger,
        plugin_manager=rlcore.PluginManager(discover=False),
    )
    $hook().register(trainer, "$hook")
    trainer.train()
    assert logger.values["$hook/total_reward"] == [6.0, 12.0, 18.0]
    assert trainer.state_dict()["modules"]["$hook"] == {"total_reward": 18.0, "batches": 3}
'''

_README = """\
# $dist

An rl-core plugin that adds the `$hook` hook. It was generated by `rlctl plugins new $name`:
replace the example hook, which logs the running total of the collected rewards, with yours.

## Install

```bash
pip install -e .        # from this directory
rlctl plugins list      # shows: $name  ($dist 0.1.0)  ok
```

## Use

In a config's `hooks` section (each parameter of the factory `$module.$hook` is an option):

```yaml
hooks:
  $hook: {scale: 1.0}
```

or on the command line: `rlctl train --algo ppo --set hooks.$hook.scale=1.0`.

## Test

```bash
pip install -e ".[test]"
pytest
```

## Layout

| file | holds |
| --- | --- |
| `pyproject.toml` | the distribution; the entry point `$name = "$module"` in the group `rlcore.plugins` is how rl-core finds the plugin |
| `$module/__init__.py` | the hook implementations (`@rlcore.hookimpl`); `rlctl plugins list` imports it, so it imports nothing heavy |
| `$module/_hook.py` | the hook class (`rlcore.TrainerHookBase`): the ops it registers and its checkpointed state |
| `tests/test_${hook}_plugin.py` | discovery through the entry point, the hook alone, the hook in a short run |

## Next steps

- Import only rl-core's public API: `rlcore` and `rlcore.hookspecs`.
- Every hook a plugin can implement is documented in `rlcore.hookspecs` and in rl-core's hook reference.
- Entry-point names and hook names are shared by every installed plugin: two plugins with the same
  name clash, so pick a distinctive one.
"""

_FILES = {
    "pyproject.toml": _PYPROJECT,
    "README.md": _README,
    "$module/__init__.py": _INIT,
    "$module/_hook.py": _HOOK,
    "tests/test_${hook}_plugin.py": _TEST,
}


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


def scaffold(name: str, directory: Path) -> Path:
    """Write the package ``directory/rl-plugin-<name>/``, ready to ``pip install`` and test.

    :param name: the plugin's short name (lowercase letters, digits and dashes, starting with a
        letter); the entry point is ``name``, the module ``rl_plugin_<name with underscores>``,
        the example hook ``<name with underscores>``.
    :param directory: where the package directory is created (made if missing).
    :return: the package directory.
    :raises ConfigError: for an invalid name, or when the package directory already exists.
    """
    from . import __version__

    check_name(name)
    hook = name.replace("-", "_")
    values = {
        "name": name,
        "dist": f"{DIST_PREFIX}{name}",
        "module": f"rl_plugin_{hook}",
        "hook": hook,
        "cls": "".join(part.capitalize() for part in name.split("-")) + "Hook",
        "core_version": ".".join(__version__.split(".")[:2]),
    }
    project = Path(directory) / values["dist"]
    if project.exists():
        raise ConfigError(f"{project} already exists; remove it or choose another NAME or --dir")
    for template_path, template in _FILES.items():
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


__all__ = ["check_name", "next_steps", "scaffold"]
