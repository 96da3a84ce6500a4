"""Docs that cannot drift: every example in README.md and docs/*.md runs, every ``rlctl`` line parses.

- **Hook reference**: docs/hooks.md documents every hook spec, with the same signature and summary line.
- **Python blocks** (```python): the blocks of a page that are not files of an example project run in
  order in one namespace, in a temporary directory; the hook implementations they define must
  register against the specs; the tests they define (a conformance-suite subclass, ``test_*``) run
  under pytest with rl-core's kit.
- **Example projects**: a block whose first line is a comment naming a path (``# pyproject.toml``,
  ``# rl_plugin_myhook/__init__.py``, ``# tests/test_myhook.py``) is a file of the page's example
  project. A page with a ``pyproject.toml`` block is built into a project, pip-installed as a real
  distribution (it must list as ``ok``), and its tests run.
- **rlctl lines** (```bash, ```console, ```sh and unlabelled blocks): every line that runs ``rlctl``
  parses against the real command tree (rl-core's commands and those the installed plugins add):
  an unknown command or option fails. The cheap ones (``plugins list``, ``config show``, ``plugins
  new``, ``--help``) run for real, in a temporary directory, and must exit 0.
- **The config block** of docs/guide.md ("The config file") is ``rlctl config show ppo`` with
  comments. The rule: the same sections, except that the guide may leave out ``plugins`` (the record
  of the distributions that took part, whose versions change); in every section the same keys,
  except ``algo``, where the guide shows a subset (the other keys are the algorithm's own, and
  ``rlctl config show NAME`` lists them); and every value the guide shows is the value rlctl shows.
"""

from __future__ import annotations

import inspect
import re
import shlex
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

import rlcore
import rlcore.hookspecs as hookspecs
from rlcore._markers import PROJECT
from rlcore_testing import run_rlctl

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "contrib").glob("*/README.md"))]
DOC = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
SPECS = {name: fn for name, fn in vars(hookspecs).items() if hasattr(fn, f"{PROJECT}_spec")}
HEADINGS = dict(re.findall(r"^### `(rl_\w+)(\(.*\) -> .*)`$", DOC, flags=re.M))

# ============================================================================ the hook reference


def signature(fn: Callable[..., Any]) -> str:
    return str(inspect.signature(fn)).replace("'", "")


def test_every_spec_is_documented_and_nothing_else() -> None:
    assert sorted(HEADINGS) == sorted(SPECS)


def test_signatures_match() -> None:
    for name, fn in SPECS.items():
        assert HEADINGS[name] == signature(fn), name


def test_summary_lines_match_and_firstresult_is_said() -> None:
    for name, fn in SPECS.items():
        section = DOC.split(f"### `{name}(", 1)[1].split("\n### ", 1)[0]
        summary = (inspect.getdoc(fn) or "").splitlines()[0]
        assert summary in section, name
        in_turn = (*hookspecs.DATA_HOOKS, *hookspecs.LOGGING_HOOKS, "rl_optimizer")  # (the trainer runs them: every implementation)
        firstresult = getattr(fn, f"{PROJECT}_spec").get("firstresult", False) and name not in in_turn
        assert ("*First result wins.*" in section) == firstresult, name


def test_the_loop_hooks_are_the_ten_seed_points() -> None:
    seed = ["batch_process", "pre_steps_log", "pre_optim_steps", "process_optim_batch", "post_loss",
            "optimizer", "post_optim", "post_optim_log", "post_steps", "post_steps_log"]  # fmt: skip
    assert list(hookspecs.LOOP_HOOKS) == [f"rl_{n}" for n in seed]


@pytest.mark.slow
def test_public_api_is_listed_and_lazy() -> None:
    assert sorted(rlcore.__all__) == sorted(
        {*rlcore._LAZY, "ConfigError", "PluginError", "RLCoreError", "hookimpl", "hookspec", "lazy_getattr", "__version__"}
    )
    code = "import sys, rlcore, rlcore_testing; assert 'torch' not in sys.modules; rlcore.Trainer; assert 'torch' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ============================================================================ the blocks of the pages

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
#: a first line ``# path/to/file.ext`` (maybe followed by `` — a comment``) makes a block a file of the example project
FILE_COMMENT = re.compile(r"^#\s+(?P<path>[\w./-]+\.(?:py|toml|cfg|txt|md))(?:\s|$)")
SHELL = ("bash", "console", "sh", "shell", "")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def path(self) -> str | None:
        """The file of the example project this block is, if its first line names one."""
        found = FILE_COMMENT.match(self.text.lstrip("\n"))
        return found.group("path") if found else None


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        body = textwrap.dedent(match.group("body")) if match.group("indent") else match.group("body")
        found.append(Block(page, text.count("\n", 0, match.start()) + 1, match.group("lang").lower(), body))
    return found


def python_pages() -> list[Path]:
    return [page for page in PAGES if any(b.lang == "python" and b.path is None for b in blocks(page))]


def project_pages() -> list[Path]:
    return [page for page in PAGES if any(b.path == "pyproject.toml" for b in blocks(page))]


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_pages_are_read() -> None:
    """The extraction finds the examples it is meant to check (a broken pattern would silently check nothing)."""
    assert {page_id(p) for p in python_pages()} >= {"docs/hooks.md", "docs/plugins.md", "docs/guide.md"}
    assert {page_id(p) for p in project_pages()} >= {"docs/plugins.md"}
    assert len(list(rlctl_lines())) >= 10


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary working directory, as a reader's, with no plugin restriction or backend choice from the outside."""
    monkeypatch.chdir(tmp_path)
    for name in ("RLCORE_PLUGINS", "CKPT_BACKEND", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    return tmp_path


def run_pytest(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run the tests in ``path`` under pytest, in this process (rl-core's kit is loaded by its entry point)."""
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:timeout", "--import-mode=importlib", "--rootdir", str(path.parent), str(path)]
    capsys.readouterr()
    code = pytest.main(args)
    output = capsys.readouterr().out
    assert code == pytest.ExitCode.OK, f"the tests of {path.name} failed:\n{output[-6000:]}"
    assert " passed" in output, output[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("page", python_pages(), ids=page_id)
def test_python_examples_run(page: Path, in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    examples = [b for b in blocks(page) if b.lang == "python" and b.path is None]
    module = types.ModuleType(f"docs_example_{page.stem}")  # a real module: dataclasses and pickling look it up
    namespace: dict[str, Any] = vars(module)
    sys.modules[module.__name__] = module
    for block in examples:
        before = dict(namespace)
        try:
            exec(compile(block.text, block.where, "exec"), namespace)
        except Exception as err:
            raise AssertionError(f"the example at {block.where} fails: {type(err).__name__}: {err}") from err
        impls = {k: v for k, v in namespace.items() if hasattr(v, f"{PROJECT}_impl") and before.get(k) is not v}
        if impls:  # its hook implementations register against the specs, as a plugin module's would
            pm = rlcore.PluginManager(discover=False)
            assert pm.add_plugin(types.SimpleNamespace(**impls), "example"), f"{block.where}: {pm.infos['example'].status}"
    if any(k.startswith("test_") or (k.startswith("Test") and isinstance(v, type)) for k, v in namespace.items()):
        module = in_tmp / f"test_docs_{page.stem}_examples.py"
        module.write_text("\n\n".join(b.text for b in examples), encoding="utf-8")
        run_pytest(module, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("page", project_pages(), ids=page_id)
def test_example_project_installs_and_passes_its_tests(
    page: Path, in_tmp: Path, rl_install_plugin: Callable[..., dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    project = in_tmp / "project"
    for block in blocks(page):
        if block.path is not None:
            (project / block.path).parent.mkdir(parents=True, exist_ok=True)
            (project / block.path).write_text(block.text, encoding="utf-8")
    entry = rl_install_plugin(project)
    assert entry["status"] == "ok", entry
    tests = sorted((project / "tests").glob("test_*.py"))
    assert tests, f"the example project of {page_id(page)} has no tests/test_*.py block"
    for test in tests:
        run_pytest(test, capsys)


# ============================================================================ rlctl lines


def rlctl_lines() -> Iterator[tuple[str, list[str], str | None]]:
    """``(where, args, stdout file)`` of every line of a shell block that runs ``rlctl``, usage brackets removed."""
    for page in PAGES:
        for block in blocks(page):
            if block.lang not in SHELL:
                continue
            for number, line in enumerate(block.text.replace("\\\n", " ").splitlines(), start=block.line + 1):
                line = line.strip().removeprefix("$ ")
                try:
                    tokens = shlex.split(line, comments=True)
                except ValueError:
                    continue  # not a command line (prose, a diagram)
                while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", tokens[0]):
                    tokens = tokens[1:]  # VAR=value before the command
                if not tokens or Path(tokens[0]).name != "rlctl":
                    continue
                args, out = tokens[1:], None
                for cut in ("|", "&&", ";"):
                    args = args[: args.index(cut)] if cut in args else args
                if ">" in args:
                    out, args = args[args.index(">") + 1], args[: args.index(">")]
                args = [a.removeprefix("[").removesuffix("...").removesuffix("]") for a in args]  # usage: [--json], RUN_DIR...
                yield f"{page_id(page)}:{number}", [a for a in args if a], out


def full_cli() -> click.Group:
    """rlctl's command tree, as ``rlctl`` builds it: rl-core's commands and those the installed plugins add."""
    from rlcore._app.cli import build_cli

    return build_cli(rlcore.PluginManager())


def parse(cli: click.Group, args: list[str]) -> list[str]:
    """Parse ``args`` as rlctl would, without running anything; return the command path.

    :raises click.UsageError: for an unknown command or option, a missing argument, a bad value.
    """
    path: list[str] = []
    ctx = cli.make_context("rlctl", list(args))
    command: click.Command = cli
    while isinstance(command, click.Group):
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            break
        name, sub, rest = command.resolve_command(ctx, rest)
        assert name is not None and sub is not None
        path.append(name)
        ctx = sub.make_context(name, rest, parent=ctx)
        command = sub
    return path


LINES = list(rlctl_lines())


@pytest.mark.parametrize(("where", "args", "out"), LINES, ids=[f"{w} {' '.join(a)}" for w, a, _ in LINES])
def test_rlctl_lines_parse(where: str, args: list[str], out: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        parse(full_cli(), args)
    except click.exceptions.Exit:
        pass  # --help or --version: printed, nothing else to parse
    except click.BadParameter as err:  # a path the reader has and this test does not
        param_type = getattr(err.param, "type", None)
        if not (isinstance(param_type, click.Path) and param_type.exists):
            raise AssertionError(f"{where}: rlctl {' '.join(args)}: {err.format_message()}") from None
    except click.UsageError as err:
        raise AssertionError(f"{where}: rlctl {' '.join(args)}: {err.format_message()}") from None


@pytest.mark.parametrize(
    "args", [["nope"], ["train", "--bogus"], ["eval"], ["plugins", "list", "--jsn"], ["--no-such-flag", "plugins", "list"]]
)
def test_the_parse_refuses_what_rlctl_refuses(args: list[str]) -> None:
    with pytest.raises(click.UsageError):
        parse(full_cli(), args)


CHEAP = (("plugins", "list"), ("config", "show"), ("plugins", "new"))


def cheap_lines() -> dict[str, tuple[list[str], str | None]]:
    """The lines that run in a moment, once each: listings, default configs, scaffolds, help."""
    found: dict[str, tuple[list[str], str | None]] = {}
    for _, args, out in LINES:
        words = [a for a in args if not a.startswith("-")]
        if tuple(words[:2]) in CHEAP or {"--help", "-h"} & set(args):
            found.setdefault(" ".join(args) + (f" > {out}" if out else ""), (args, out))
    return found


CHEAP_LINES = cheap_lines()


@pytest.mark.parametrize("line", sorted(CHEAP_LINES))
def test_cheap_rlctl_lines_run(line: str, in_tmp: Path) -> None:
    args, out = CHEAP_LINES[line]
    done = run_rlctl(*args)
    assert done.returncode == 0, f"rlctl {line} exited {done.returncode}: {done.stderr}"
    assert done.stdout.strip(), f"rlctl {line} printed nothing"
    if out is not None:
        (in_tmp / out).write_text(done.stdout, encoding="utf-8")


# ============================================================================ the guide's config block


def guide_config_block() -> dict[str, Any]:
    """The first ```yaml block under docs/guide.md's heading "The config file"."""
    section = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8").split("## The config file", 1)[1].split("\n## ", 1)[0]
    found = [m.group("body") for m in FENCE.finditer(section) if m.group("lang") == "yaml"]
    assert found, "docs/guide.md: no ```yaml block under 'The config file'"
    return yaml.safe_load(found[0])


def test_the_guide_config_block_is_rlctl_config_show_ppo(in_tmp: Path) -> None:
    documented = guide_config_block()
    done = run_rlctl("config", "show", "ppo")
    assert done.returncode == 0, done.stderr
    shown = yaml.safe_load(done.stdout)
    assert set(documented) == set(shown) - {"plugins"} or set(documented) == set(shown), (
        f"sections: the guide shows {sorted(documented)}, rlctl config show ppo {sorted(shown)}"
    )
    differences = []
    for section, keys in documented.items():
        if section == "plugins":
            continue
        if not isinstance(keys, dict) or not isinstance(shown[section], dict):
            if keys != shown[section]:
                differences.append(f"{section}: the guide shows {keys!r}, rlctl {shown[section]!r}")
            continue
        extra, missing = sorted(set(keys) - set(shown[section])), sorted(set(shown[section]) - set(keys))
        if extra:
            differences.append(f"{section}: the guide shows keys rlctl does not: {extra}")
        if missing and section != "algo":
            differences.append(f"{section}: the guide leaves out {missing}")
        differences += [
            f"{section}.{key}: the guide shows {value!r}, rlctl {shown[section][key]!r}"
            for key, value in keys.items()
            if key in shown[section] and value != shown[section][key]
        ]
    assert not differences, "docs/guide.md 'The config file' differs from `rlctl config show ppo`:\n" + "\n".join(differences)


def test_every_public_name_of_rlcore_is_documented():
    import rlcore

    text = "".join(page.read_text() for page in (ROOT / "docs").glob("*.md")) + (ROOT / "README.md").read_text()
    assert [name for name in rlcore.__all__ if name != "__version__" and name not in text] == []
