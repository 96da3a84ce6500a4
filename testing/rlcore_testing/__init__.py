"""rl-core's kit for plugin authors (pytest's ``pytester``, datasette's test helpers).

Its own distribution, ``rl-core-testing`` (``pip install rl-core-testing``), registers this module as a
pytest plugin (its ``pytest11`` entry point ``rlcore``), so its fixtures are at hand in any test of an
environment where it is installed (``pip install rl-core`` alone adds nothing to a user's pytest):

- ``rl_make_trainer(**options)``: a tiny real :class:`rlcore.Trainer` (:func:`make_trainer`) in a temporary run directory;
- ``rl_trainer``: one with the defaults, logging to ``rl_logger``, ``rl_hook_recorder`` registered;
- ``rl_logger``: a :class:`MemoryLogger` (``values``: ``{name: [(step, value)]}``);
- ``rl_hook_recorder``: a :class:`HookRecorder` of every loop and lifecycle hook call;
- ``rl_install_plugin(project_dir)``: pip-installs a plugin project as a real distribution and
  returns its ``rlctl plugins list --json`` entry.

:func:`run_rlctl` runs ``rlctl ARGS`` in the test's process (``subprocess=True``: in a process of its own) and
returns its exit code, stdout and stderr, as pytester's ``runpytest``.

Resume checks: :func:`kill_and_resume` runs ``rlctl`` twice side by side, kills one with SIGKILL
after a checkpoint and resumes it; :func:`last_checkpoint` and :func:`assert_state_equal` compare them.

Conformance suites, subclassed in a test module with the implementation's own factory:
:class:`LoggerConformance`, :class:`CheckpointBackendConformance`, :class:`PluginConformance`.

Importing this module does not import torch (the fixtures and tests import it when they run).
``pytest -p no:rlcore`` turns the fixtures off.
"""

from __future__ import annotations

import pytest

# the suites' asserts get pytest's detailed messages (an editable install is not rewritten by itself)
pytest.register_assert_rewrite("rlcore_testing._backend_suite", "rlcore_testing._logger_suite", "rlcore_testing._plugin_suite", "rlcore_testing._resume")

from ._backend_suite import CheckpointBackendConformance, Damage  # noqa: E402
from ._cli import RunResult, run_rlctl  # noqa: E402
from ._fixtures import rl_hook_recorder, rl_install_plugin, rl_logger, rl_make_trainer, rl_trainer  # noqa: E402
from ._install import Listing, pip_install, rlctl_plugins_list, use_site  # noqa: E402
from ._logger_suite import LoggerConformance, Scalars  # noqa: E402
from ._memory import MemoryLogger  # noqa: E402
from ._plugin_suite import PluginConformance  # noqa: E402
from ._recorder import HookCall, HookRecorder  # noqa: E402
from ._resume import KilledRun, kill_and_resume, last_checkpoint  # noqa: E402
from ._state import assert_state_equal, realistic_state  # noqa: E402
from ._trainer import make_trainer  # noqa: E402

__all__ = [
    "CheckpointBackendConformance",
    "Damage",
    "HookCall",
    "HookRecorder",
    "KilledRun",
    "Listing",
    "LoggerConformance",
    "MemoryLogger",
    "PluginConformance",
    "RunResult",
    "Scalars",
    "assert_state_equal",
    "kill_and_resume",
    "last_checkpoint",
    "make_trainer",
    "pip_install",
    "realistic_state",
    "rl_hook_recorder",
    "rl_install_plugin",
    "rl_logger",
    "rl_make_trainer",
    "rl_trainer",
    "rlctl_plugins_list",
    "run_rlctl",
    "use_site",
]
