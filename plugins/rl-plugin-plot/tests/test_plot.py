"""``rlctl plot`` found through its entry point: learning curves of runs written by rl-core's own CSV logger."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

import rlcore
from rl_plugin_plot import read_metrics

#: run rlctl as ``python -m rlcore`` does, then say on stderr which heavy modules it imported
RLCTL = (
    "import json, runpy, sys\n"
    "sys.argv = ['rlctl', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('rlcore', run_name='__main__')\n"
    "except SystemExit as done:\n"
    "    code = done.code\n"
    "heavy = sorted(m for m in ('torch', 'matplotlib', 'imageio') if m in sys.modules)\n"
    "print(json.dumps({'code': code, 'heavy': heavy}), file=sys.stderr)\n"
)
#: matplotlib's default colours of the first two lines of a panel (C0, C1)
LINE_COLOURS = ((0x1F, 0x77, 0xB4), (0xFF, 0x7F, 0x0E))


def rlctl(*args: str, plugins: str = "rl-plugin-plot") -> tuple[int, str, str, list[str]]:
    """Run rlctl with only ``plugins`` loaded: exit code, stdout, stderr (without the report line), heavy modules imported."""
    env = {**os.environ, "RLCORE_PLUGINS": plugins}
    done = subprocess.run([sys.executable, "-c", RLCTL, *args], env=env, capture_output=True, text=True, timeout=120)
    *stderr, report = done.stderr.strip().splitlines()
    result = json.loads(report)
    return result["code"], done.stdout, "\n".join(stderr), result["heavy"]


def write_run(run_dir: Path, scale: float) -> None:
    """A run's ``metrics.csv``, written by the builtin ``csv`` logger."""
    pm = rlcore.get_plugin_manager(only=[])  # rl-core's builtins only
    logger = rlcore.get_logger("csv", exp_name=run_dir.name, log_dir=run_dir, plugin_manager=pm)
    for step in range(1, 11):
        logger.log_scalars({"train/episode_return": scale * step, "loss/objective": -scale / step}, step * 256)
    logger.close()


@pytest.mark.slow
def test_plot_draws_one_panel_per_metric_and_one_line_per_run(tmp_path: Path) -> None:
    write_run(tmp_path / "a", 1.0)
    write_run(tmp_path / "b", 2.0)
    out = tmp_path / "figures" / "curves.png"
    metrics = ("--metric", "train/episode_return", "--metric", "loss/objective")
    code, stdout, stderr, _ = rlctl("plot", str(tmp_path / "a"), str(tmp_path / "b"), *metrics, "-o", str(out))
    assert code == 0, stderr
    assert stdout.strip() == str(out)
    image = matplotlib.image.imread(out)
    assert image.shape[:2] == (640, 800)  # two panels of 8 x 3.2 inches at 100 dpi
    pixels = (image[..., :3] * 255).reshape(-1, 3)
    for colour in LINE_COLOURS:  # a line of each run
        assert (np.abs(pixels - colour).max(axis=1) < 8).sum() > 100, colour


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    write_run(tmp_path / "a", 1.0)
    cases = [
        (["--metric", "nope"], "rlctl: error: --metric: no run has 'nope' (valid choices: loss/objective, train/episode_return)"),
        (["-o", str(tmp_path / "curves.xyz")], f"rlctl: error: -o {tmp_path / 'curves.xyz'}: unknown image format 'xyz' (valid choices: "),
        (["-o", str(tmp_path / "a" / "metrics.csv" / "c.png")], f"rlctl: error: -o {tmp_path / 'a' / 'metrics.csv' / 'c.png'}: cannot write it ("),
    ]
    for extra, message in cases:
        code, _, stderr, _ = rlctl("plot", str(tmp_path / "a"), *extra)
        assert code == 2 and stderr.startswith(message) and len(stderr.splitlines()) == 1, stderr
    code, _, stderr, _ = rlctl("plot", str(tmp_path / "missing"))
    assert code == 2 and stderr == f"rlctl: error: {tmp_path / 'missing' / 'metrics.csv'}: cannot read metrics (No such file or directory)"
    diverged = tmp_path / "diverged"  # values no axis holds (matplotlib raised in its tick locator)
    logger = rlcore.get_logger("csv", exp_name="diverged", log_dir=diverged, plugin_manager=rlcore.get_plugin_manager(only=[]))
    for step, value in enumerate((1.0, 1e308, -1e308, float("inf"), float("nan")), start=1):
        logger.log_scalar("train/episode_return", value, step)
    logger.close()
    code, _, stderr, _ = rlctl("plot", str(diverged), "-o", str(tmp_path / "d.png"))
    assert code == 2 and stderr == "rlctl: error: --metric train/episode_return: its values span -1e+308 to 1e+308, more than a plot's axis holds"


def test_command_is_listed_only_with_the_plugin_and_imports_nothing_heavy() -> None:
    code, stdout, _, heavy = rlctl("--help")
    assert code == 0 and heavy == []
    assert "  plot " in stdout
    for blocked in (("--no-plugin", "plot", "--help"), ("--no-plugin", "rl-plugin-plot", "--help")):
        code, stdout, _, heavy = rlctl(*blocked)
        assert code == 0 and heavy == [] and "  plot " not in stdout
    code, _, stderr, _ = rlctl("plot", "somewhere", plugins="")  # RLCORE_PLUGINS empty: no third-party plugin
    assert code == 2 and "No such command 'plot'" in stderr
    code, stdout, _, heavy = rlctl("plugins", "list", "--json")
    (plot,) = [info for info in json.loads(stdout) if info["name"] == "plot"]
    assert (plot["distribution"], plot["status"], plot["hooks"]) == ("rl-plugin-plot", "ok", ["rl_register_commands"])
    assert plot["provides"] == {"commands": ["plot", "report"]}
    assert heavy == []


def test_a_run_whose_csv_logger_wrote_another_file_is_read_from_it(tmp_path: Path) -> None:
    write_run(tmp_path / "a", 1.0)
    (tmp_path / "a" / "logs").mkdir()
    (tmp_path / "a" / "metrics.csv").rename(tmp_path / "a" / "logs" / "m.csv")
    (tmp_path / "a" / "config.yaml").write_text("loggers:\n  csv: {filename: logs/m.csv}\n")  # as rlctl saved it
    assert read_metrics(tmp_path / "a")["train/episode_return"] == ([256 * step for step in range(1, 11)], [float(step) for step in range(1, 11)])


def test_read_metrics_names_the_file_it_cannot_use(tmp_path: Path) -> None:
    write_run(tmp_path / "a", 1.0)
    frames, values = read_metrics(tmp_path / "a")["train/episode_return"]
    assert frames == [256 * step for step in range(1, 11)] and values == [float(step) for step in range(1, 11)]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "metrics.csv").write_text("step,metric\n1,2\n")
    with pytest.raises(rlcore.ConfigError, match=r"metrics\.csv: not an rl-core metrics file \(expected the columns frames,name,value"):
        read_metrics(tmp_path / "b")


def test_a_damaged_row_is_dropped_with_a_warning(tmp_path: Path) -> None:
    write_run(tmp_path / "a", 1.0)
    with open(tmp_path / "a" / "metrics.csv", "a", encoding="utf-8") as handle:
        handle.write("2816,train/episode_ret")  # the half-written last line of a killed run
    with pytest.warns(UserWarning, match=r"metrics\.csv line 22 is damaged and was dropped"):
        frames, values = read_metrics(tmp_path / "a")["train/episode_return"]
    assert frames == [256 * step for step in range(1, 11)] and values == [float(step) for step in range(1, 11)]
