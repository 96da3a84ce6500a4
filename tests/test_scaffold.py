"""``rlctl plugins new NAME``: the scaffolded package installs and passes its own tests as generated."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest
import rlcore
from rlcore._scaffold import check_name, next_steps, scaffold

NAME = "scaffold-demo"  # an entry-point name no other test plugin uses


def _clean_env() -> dict[str, str]:
    """The environment of a user's shell: no test-only search paths, no plugin restriction."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RLCORE_PLUGINS")}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def _venv(root: Path) -> Path:
    """A fresh venv that also sees this interpreter's packages (rl-core, torch, pytest, setuptools).

    ``venv --system-site-packages`` would only expose the *base* interpreter's site-packages, not
    those of the venv these tests run in, so a ``.pth`` file adds them with ``site.addsitedir``
    (which also runs their ``.pth`` files: editable installs keep working). The venv's own
    site-packages stay first on ``sys.path``.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    venv_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
    (Path(venv_site) / "_outer_site.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return python


def test_scaffolded_plugin_installs_and_passes_its_own_tests(tmp_path: Path) -> None:
    project = scaffold(NAME, tmp_path)
    assert project == tmp_path / f"rl-plugin-{NAME}"
    python = _venv(tmp_path / "venv")
    env = _clean_env()
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
         "--no-deps", "--no-build-isolation", "--no-index", str(project)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert install.returncode == 0, install.stdout + install.stderr

    tests = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project, capture_output=True, text=True, env=env, timeout=120,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "5 passed" in tests.stdout

    listing = subprocess.run(
        [str(python), "-m", "rlcore", "plugins", "list", "--json"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert listing.returncode == 0, listing.stderr
    info = {entry["name"]: entry for entry in json.loads(listing.stdout)}[NAME]
    assert info["status"] == "ok"
    assert info["distribution"] == f"rl-plugin-{NAME}"
    assert info["provides"] == {"hooks": ["scaffold_demo"]}


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


@pytest.mark.parametrize("name", ["", "Reward", "1reward", "reward_stats", "reward--stats", "reward-", "-reward", "import", "rl-plugin-reward"])
def test_invalid_names_are_one_line_config_errors(name: str, tmp_path: Path) -> None:
    with pytest.raises(rlcore.ConfigError, match="lowercase letters, digits and single dashes, starting with a letter") as info:
        scaffold(name, tmp_path)
    assert "\n" not in str(info.value)
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


def test_rlctl_plugins_new_bad_name_or_existing_directory_exits_2(tmp_path: Path) -> None:
    bad = _rlctl("plugins", "new", "Reward_Stats", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("rlctl: error: invalid plugin name 'Reward_Stats': use lowercase letters")
    assert len(bad.stderr.strip().splitlines()) == 1
    assert _rlctl("plugins", "new", "taken", cwd=tmp_path).returncode == 0
    again = _rlctl("plugins", "new", "taken", cwd=tmp_path)
    assert again.returncode == 2
    assert "already exists" in again.stderr
