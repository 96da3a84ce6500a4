"""Plugins installed as real distributions (pip, ``--target`` a temporary site) and listed by ``rlctl``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

#: what is never copied into a build: earlier build outputs and caches of the source tree
_BUILD_LEFTOVERS = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".git", ".venv")


def pip_install(projects: Iterable[str | os.PathLike[str]], site: str | os.PathLike[str], *, timeout: float = 300) -> list[str]:
    """Install plugin projects as real distributions into the directory ``site`` (one pip run).

    ``pip install --no-deps --no-build-isolation --target SITE``: nothing is downloaded and the
    build uses the setuptools of this interpreter. Each project is built from a copy, so that no
    ``build/`` or ``*.egg-info`` lands in its source tree.

    :param projects: directories holding a ``pyproject.toml``.
    :param site: where the distributions go (made if missing).
    :param timeout: seconds pip may take.
    :return: the names of the distributions installed.
    :raises RuntimeError: with pip's output when it fails.
    """
    site = Path(site)
    site.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rlcore-build-") as build:
        copies = []
        for project in projects:
            copy = Path(build) / Path(project).resolve().name
            shutil.copytree(project, copy, ignore=_BUILD_LEFTOVERS)
            copies.append(str(copy))
        report = Path(build) / "report.json"
        options = ["-q", "--no-deps", "--no-build-isolation", "--no-index", "--target", str(site), "--report", str(report)]
        env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", *options, *copies],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"pip install failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        installed = json.loads(report.read_text(encoding="utf-8"))["install"]
    return sorted(item["metadata"]["name"] for item in installed)


def entry_point_names(distribution: str, site: str | os.PathLike[str] | None = None) -> list[str]:
    """The ``rlcore.plugins`` entry-point names that ``distribution`` declares.

    :param distribution: a distribution name.
    :param site: where it is installed; default the current ``sys.path``.
    """
    from rlcore import ENTRY_POINT_GROUP

    found = metadata.distributions(name=distribution, path=[str(site)] if site is not None else sys.path)
    for dist in found:
        return sorted(ep.name for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP)
    raise LookupError(f"distribution {distribution!r} is not installed" + (f" in {site}" if site is not None else ""))


def use_site(site: str | os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the distributions of ``site`` discoverable here (``sys.path``) and in subprocesses (``PYTHONPATH``).

    ``monkeypatch`` undoes it at the end of the test, the cache of entry points included: they are
    read again now, and after the test the plugins of ``site`` are no longer found.

    :param site: a directory filled by :func:`pip_install`.
    :param monkeypatch: the test's ``monkeypatch`` fixture.
    """
    monkeypatch.syspath_prepend(str(site))  # (it invalidates the import caches, now and when undone; rl-core reads entry points per sys.path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p))


@dataclass
class Listing:
    """What ``rlctl plugins list --json`` printed, and which modules the listing imported.

    :param entries: the JSON list, one object per plugin.
    :param modules: every module imported in the listing process.
    """

    entries: list[dict[str, Any]]
    modules: set[str] = field(default_factory=set)

    def entry(self, name: str) -> dict[str, Any]:
        """The entry of the plugin ``name``.

        :raises LookupError: naming the plugins listed.
        """
        for entry in self.entries:
            if entry["name"] == name:
                return entry
        raise LookupError(f"plugin {name!r} is not listed; listed: {', '.join(e['name'] for e in self.entries) or 'none'}")

    def imported(self, *modules: str) -> list[str]:
        """Those of ``modules`` (or their submodules) that the listing imported."""
        return sorted({m for m in modules for loaded in self.modules if loaded == m or loaded.startswith(m + ".")})


#: runs ``python -m rlcore ARGS``, then writes the modules it imported to the file named first
_LIST_CODE = """\
import json, runpy, sys
out = sys.argv.pop(1)
sys.argv[0] = "rlctl"
code = 0
try:
    runpy.run_module("rlcore", run_name="__main__", alter_sys=True)
except SystemExit as done:
    code = done.code
with open(out, "w", encoding="utf-8") as handle:
    json.dump(sorted(sys.modules), handle)
sys.exit(code)
"""


def rlctl_plugins_list(
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> Listing:
    """Run ``rlctl [ARGS] plugins list --json --all`` in a fresh interpreter, as a user would.

    :param args: options of ``rlctl`` itself, e.g. ``("--plugin", "rl-plugin-mine")``.
    :param env: the environment (default this process's: ``PYTHONPATH`` set by :func:`use_site` applies).
    :param timeout: seconds the listing may take.
    :raises RuntimeError: with its output when ``rlctl`` fails.
    """
    with tempfile.TemporaryDirectory(prefix="rlcore-list-") as tmp:
        out = Path(tmp) / "modules.json"
        cmd = [sys.executable, "-c", _LIST_CODE, str(out), *args, "plugins", "list", "--json", "--all"]
        done = subprocess.run(
            cmd, check=False, capture_output=True, text=True, env=dict(env if env is not None else os.environ), timeout=timeout
        )
        if done.returncode != 0 or not out.is_file():
            raise RuntimeError(f"rlctl plugins list failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        modules = set(json.loads(out.read_text(encoding="utf-8")))
    return Listing(json.loads(done.stdout), modules)


def install_plugin(
    project: str | os.PathLike[str],
    site: str | os.PathLike[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str | None = None,
) -> dict[str, Any]:
    """Install one plugin project into ``site``, make it discoverable, and return its ``rlctl plugins list --json`` entry.

    :param project: a directory holding a ``pyproject.toml``.
    :param site: where it is installed.
    :param monkeypatch: the test's ``monkeypatch`` fixture (see :func:`use_site`).
    :param name: the entry-point name to return, when the project declares several.
    :raises LookupError: when the project declares no (or not that) ``rlcore.plugins`` entry point.
    """
    distributions = pip_install([project], site)
    use_site(site, monkeypatch)
    names = [n for dist in distributions for n in entry_point_names(dist, site)]
    if name is None and len(names) != 1:
        raise LookupError(f"{project} declares {len(names)} rlcore.plugins entry points ({', '.join(names) or 'none'}); pass name=")
    wanted = name or names[0]
    if wanted not in names:
        raise LookupError(f"{project} declares no rlcore.plugins entry point {wanted!r} (it declares {', '.join(names) or 'none'})")
    listing = rlctl_plugins_list(*(arg for dist in distributions for arg in ("--plugin", dist)))
    return listing.entry(wanted)


__all__ = ["Listing", "entry_point_names", "install_plugin", "pip_install", "rlctl_plugins_list", "use_site"]
