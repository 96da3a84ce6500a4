"""``rlctl plugins new NAME``: the scaffolded package installs and passes its own tests as generated."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rlcore
from rlcore._app import scaffold as scaffold_module
from rlcore._app.scaffold import check_name, next_steps, scaffold
from rlcore_testing import pip_install, rlctl_plugins_list

ROOT = Path(__file__).parents[1]
RUN: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 180}


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no test-only search paths, no plugin restriction."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RLCORE_PLUGINS")}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1", **extra}


#: a plugin of each kind, named so that no other test plugin has its entry point; what it provides; its tests
KINDS = {
    "hook": ("demo-hook", {"hooks": ["demo_hook"]}, 6),
    "algorithm": ("demo-algorithm", {"algorithms": ["demo-algorithm"]}, 7),
    "env": ("demo-env", {"envs": ["DemoEnv-v0"]}, 6),
    "logger": ("demo-logger", {"loggers": ["demo_logger"]}, 11),
}


@pytest.mark.slow
def test_new_then_pip_install_then_pytest_passes_for_every_kind(tmp_path: Path) -> None:
    """``rlctl plugins new X --kind K && pip install ./X && pytest X``, as a user's shell runs them, for every kind.

    pip installs into a site of its own (``--target``, on ``PYTHONPATH``), so that the installed
    distributions, not the source trees, are what the generated tests and ``rlctl`` meet.
    """
    projects = []
    for kind, (name, _, _) in KINDS.items():
        new = subprocess.run([sys.executable, "-m", "rlcore", "plugins", "new", name, "--kind", kind], cwd=tmp_path, env=_clean_env(), **RUN)
        assert new.returncode == 0, new.stderr
        projects.append(tmp_path / f"rl-plugin-{name}")
    assert pip_install(projects, tmp_path / "site") == sorted(p.name for p in projects)
    env = _clean_env(PYTHONPATH=str(tmp_path / "site"))

    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *(p.name for p in projects)]
    tests = subprocess.run(args, cwd=tmp_path, env=env, **{**RUN, "timeout": 600})
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert f"{sum(count for _, _, count in KINDS.values())} passed" in tests.stdout, tests.stdout

    listing = rlctl_plugins_list(env=env)
    for name, provides, _ in KINDS.values():
        info = listing.entry(name)
        assert (info["status"], info["distribution"], info["version"], info["provides"]) == ("ok", f"rl-plugin-{name}", "0.1.0", provides)
    assert not list(tmp_path.rglob("*.egg-info")) and not list(tmp_path.glob("*/build"))  # pip built copies


def test_generated_code_is_lint_clean_in_the_house_style(tmp_path: Path) -> None:
    pytest.importorskip("ruff")
    projects = [str(scaffold(name, tmp_path, kind)) for kind, (name, _, _) in KINDS.items()]
    config = str(ROOT / "pyproject.toml")
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", config, *projects], **RUN)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    for path in tmp_path.rglob("*.py"):
        compile(path.read_text(encoding="utf-8"), str(path), "exec")


def test_templates_are_package_data_with_no_placeholder_left(tmp_path: Path) -> None:
    tomllib = pytest.importorskip("tomllib")
    package = Path(rlcore.__file__).parent
    templates = {p for p in (package / "templates").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert templates and all(p.name.endswith(".tmpl") for p in templates), templates
    assert {p.relative_to(package / "templates").parts[0] for p in templates} == {"common", *KINDS}
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]["rlcore"]
    shipped = {p for pattern in globs for p in package.glob(pattern)}
    assert templates <= shipped, f"not in rl-core's package data: {sorted(templates - shipped)}"
    for kind in KINDS:
        for path in scaffold("reward-stats", tmp_path / kind, kind).rglob("*"):
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                assert not re.search(r"\$\{?[a-z_]+", text), f"{path}: placeholder left"
    constants = [name for name, value in vars(scaffold_module).items() if isinstance(value, str) and "\n" in value and name != "__doc__"]
    assert not constants, f"templates belong in rlcore/templates/, not in scaffold.py: {constants}"


def test_scaffold_writes_the_documented_layout(tmp_path: Path) -> None:
    project = scaffold("reward-stats", tmp_path / "new")
    files = sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    assert files == [
        "README.md",
        "pyproject.toml",
        "rl_plugin_reward_stats/__init__.py",
        "rl_plugin_reward_stats/_hook.py",
        "tests/test_reward_stats_plugin.py",
    ]
    pyproject = (project / "pyproject.toml").read_text(encoding="utf-8")
    assert 'name = "rl-plugin-reward-stats"' in pyproject
    assert '[project.entry-points."rlcore.plugins"]\nreward-stats = "rl_plugin_reward_stats"' in pyproject
    assert "import torch" not in (project / "rl_plugin_reward_stats" / "__init__.py").read_text(encoding="utf-8")
    assert f"cd {project}" in next_steps(project)


@pytest.mark.parametrize(
    "name", ["", "Reward", "1reward", "reward_stats", "reward--stats", "reward-", "-reward", "import", "rl-plugin-reward"]
)
def test_invalid_names_are_one_line_config_errors(name: str, tmp_path: Path) -> None:
    with pytest.raises(rlcore.ConfigError, match="lowercase letters, digits and single dashes, starting with a letter") as info:
        scaffold(name, tmp_path)
    assert "\n" not in str(info.value)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["pg", "replay", "video"])
def test_the_names_of_rl_cores_own_plugins_are_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(rlcore.ConfigError, match=f"^invalid plugin name '{name}': rl-core's own rl-plugin-{name} has it; choose another$"):
        scaffold(name, tmp_path)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("name", ["a", "reward-stats", "ppo2", "a1-b2-c3"])
def test_valid_names(name: str) -> None:
    check_name(name)


def test_an_existing_directory_is_not_overwritten(tmp_path: Path) -> None:
    existing = tmp_path / "rl-plugin-taken"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(rlcore.ConfigError, match="already exists"):
        scaffold("taken", tmp_path)
    assert [p.name for p in existing.iterdir()] == ["keep.txt"]


def _rlctl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rlcore", *args], capture_output=True, text=True, cwd=cwd, env=_clean_env(), timeout=60)


def test_rlctl_plugins_new_prints_the_path_and_next_steps(tmp_path: Path) -> None:
    done = _rlctl("plugins", "new", "reward-stats", "--dir", "plugins", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    project = Path("plugins") / "rl-plugin-reward-stats"
    assert (tmp_path / project / "pyproject.toml").is_file()
    assert done.stdout.splitlines()[0] == f"created {project}"
    assert 'pip install -e ".[test]"' in done.stdout


@pytest.mark.slow
def test_rlctl_plugins_new_bad_name_or_existing_directory_exits_2(tmp_path: Path) -> None:
    bad = _rlctl("plugins", "new", "Reward_Stats", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("rlctl: error: invalid plugin name 'Reward_Stats': use lowercase letters")
    assert len(bad.stderr.strip().splitlines()) == 1
    assert _rlctl("plugins", "new", "taken", cwd=tmp_path).returncode == 0
    again = _rlctl("plugins", "new", "taken", cwd=tmp_path)
    assert again.returncode == 2
    assert "already exists" in again.stderr


def test_a_name_whose_distribution_is_installed_is_warned_about(tmp_path: Path) -> None:
    pytest.importorskip("rl_plugin_early_stopping")  # contrib's, installed by the development set-up
    with pytest.warns(UserWarning, match=r"^rl-plugin-early-stopping \S+ is installed already; installing the new package replaces it$"):
        scaffold("early-stopping", tmp_path)
    assert (tmp_path / "rl-plugin-early-stopping" / "pyproject.toml").is_file()


def test_an_unknown_kind_is_a_one_line_config_error_naming_the_kinds(tmp_path: Path) -> None:
    with pytest.raises(rlcore.ConfigError, match=r"^--kind: unknown kind 'wrapper' \(valid choices: hook, algorithm, env, logger\)$"):
        scaffold("reward-stats", tmp_path, "wrapper")
    assert not any(tmp_path.iterdir())
