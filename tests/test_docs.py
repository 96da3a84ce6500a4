"""docs/hooks.md documents every hook spec: same hooks, same signatures, same summary lines."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import rlcore.hookspecs as hookspecs
from rlcore._markers import PROJECT

DOC = (Path(__file__).parents[1] / "docs" / "hooks.md").read_text(encoding="utf-8")
SPECS = {name: fn for name, fn in vars(hookspecs).items() if hasattr(fn, f"{PROJECT}_spec")}
HEADINGS = dict(re.findall(r"^### `(rl_\w+)(\(.*\) -> .*)`$", DOC, flags=re.M))


def signature(fn) -> str:
    return str(inspect.signature(fn)).replace("'", "")


def test_every_spec_is_documented_and_nothing_else():
    assert sorted(HEADINGS) == sorted(SPECS)


def test_signatures_match():
    for name, fn in SPECS.items():
        assert HEADINGS[name] == signature(fn), name


def test_summary_lines_match_and_firstresult_is_said():
    for name, fn in SPECS.items():
        section = DOC.split(f"### `{name}(", 1)[1].split("\n### ", 1)[0]
        summary = inspect.getdoc(fn).splitlines()[0]
        assert summary in section, name
        firstresult = getattr(fn, f"{PROJECT}_spec").get("firstresult", False)
        assert ("*First result wins.*" in section) == firstresult, name


def test_the_loop_hooks_are_the_ten_seed_points():
    seed = ["batch_process", "pre_steps_log", "pre_optim_steps", "process_optim_batch", "post_loss",
            "optimizer", "post_optim", "post_optim_log", "post_steps", "post_steps_log"]
    assert list(hookspecs.LOOP_HOOKS) == [f"rl_{n}" for n in seed]


def test_public_api_is_listed_and_lazy():
    import subprocess
    import sys

    import rlcore

    assert sorted(rlcore.__all__) == sorted({*rlcore._LAZY, "ConfigError", "PluginError", "RLCoreError", "hookimpl", "hookspec", "__version__"})
    code = "import sys, rlcore; assert 'torch' not in sys.modules; rlcore.Trainer; assert 'torch' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
