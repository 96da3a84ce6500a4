"""``rlctl``: list plugins, train, evaluate, show configs. Plugins add sub-commands through ``rl_register_commands``.

Lazy imports: the modules that build and run a run (``config``, ``build``, ``evaluate``) are imported by
the commands that use them, so that ``rlctl --help`` and ``rlctl plugins list`` import no torch.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import threading
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from .._kernel.contracts import CONFIG_FILE
from .._kernel.deadline import plugin_timeout, within
from .._kernel.errors import ConfigError, RLCoreError, error_line, one_line, valid_choices
from .._kernel.logger import Logger
from .._kernel.manager import ENV_PLUGINS, PluginInfo, PluginManager, first_party_data, parse_names, where_failed
from .plugins import describe, known_names, unknown_names, warn_broken
from .scaffold import KINDS, next_steps, scaffold

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
SIGNAL_EXIT: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143}
#: seconds after a first signal before a run that has not stopped says where it is stuck
STOPPING_SECONDS = 5.0


def _preparse(argv: Sequence[str]) -> tuple[list[str] | None, list[str]]:
    """Read ``--plugin``/``--no-plugin`` before anything is imported (they decide what loads)."""
    only: list[str] | None = None
    block: list[str] = []
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--":
            break
        for flag in ("--plugin", "--no-plugin"):
            value = None
            if arg == flag and i + 1 < len(args):
                value = args[i + 1]
            elif arg.startswith(flag + "="):
                value = arg.split("=", 1)[1]
            if value is None:
                continue
            names = sorted(parse_names(value) or [])
            if flag == "--plugin":
                only = (only or []) + names
            else:
                block += names
    return only, block


def launched_apart() -> bool:
    """Whether a launcher (``torchrun``) started this process as one of several (``WORLD_SIZE``): then it must not stop on
    its own while it is built, where it may wait in C for the others."""
    size = os.environ.get("WORLD_SIZE", "1")
    return size.isdigit() and int(size) > 1


def _say(text: str) -> None:
    """A message on stderr, from the first process only when a launcher started several (they would all say it)."""
    if not launched_apart() or os.environ.get("RANK", "0") == "0":
        click.echo(text, err=True)


def _echo_error(message: str) -> None:
    _say(f"rlctl: error: {message}")


def make_cli(pm: PluginManager) -> click.Group:
    """The ``rlctl`` command group, bound to the plugin manager ``pm``."""

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    @click.option("--plugin", "plugins", multiple=True, metavar="NAME", help="Load only these third-party plugins (repeatable; overrides RLCORE_PLUGINS).")
    @click.option("--no-plugin", "blocked", multiple=True, metavar="NAME", help="Never load this plugin (entry-point or distribution name; repeatable).")
    @click.version_option(package_name="rl-core", prog_name="rlctl")
    def cli(plugins: tuple[str, ...], blocked: tuple[str, ...]) -> None:
        """rl-core: reinforcement-learning training built from plugins."""

    @cli.group()
    def plugins() -> None:
        """Inspect installed plugins, or scaffold a new one."""

    @plugins.command("list")
    @click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
    @click.option("--all", "show_all", is_flag=True, help="Include rl-core's builtin plugins.")
    def plugins_list(as_json: bool, show_all: bool) -> None:
        """Every discovered plugin: version, hooks, what it provides, status."""
        infos = [i for i in describe_plugins(pm) if show_all or not i.builtin]
        if as_json:
            click.echo(json.dumps([i.to_dict() for i in infos], indent=2))
            return
        if not infos:
            click.echo("no plugins installed (rlctl plugins list --all shows the builtins)")
        for info in infos:
            click.echo(_describe(info))

    @plugins.command("new")
    @click.argument("name")
    @click.option(
        "--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=".", show_default=True, help="Where to create rl-plugin-NAME/."
    )
    @click.option(
        "--kind", type=click.Choice(list(KINDS)), default="hook", show_default=True, help="What the plugin provides."
    )
    def plugins_new(name: str, directory: Path, kind: str) -> None:
        """Scaffold rl-plugin-NAME/: a plugin package that installs and passes its own tests as generated."""
        click.echo(next_steps(scaffold(name, directory, kind)))

    @cli.group()
    def config() -> None:
        """Default configs."""

    @config.command("show")
    @click.argument("algo", required=False)
    @click.option("--env", "env_id", help="Show the config for this env (with the algorithm's preset for it, if any).")
    @click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a key as train does; hooks.NAME={} shows every option of hook NAME.")
    def config_show(algo: str | None, env_id: str | None, overrides: tuple[str, ...]) -> None:
        """Print the default config of ALGO, ready to edit and pass to `rlctl train` (refused, as train refuses it, when the env does not fit ALGO).

        Every option of the loggers, hooks and wrappers it names is written out, their defaults too.
        Without ALGO: the installed algorithms, each with its summary and its plugin.
        """
        from .build import check_fits  # (lazy: torch)
        from .config import check_config, dump_config, load_config

        if algo is None:
            algorithms = pm.registry("algorithms")
            if not algorithms:
                raise ConfigError("config show: no algorithm is loaded (pip install rl-plugin-pg for PPO and more; rlctl plugins list shows what is installed)")
            width = max(map(len, algorithms))
            click.echo("algorithms (rlctl config show ALGO prints one's defaults):")
            for name, (plugin, algorithm) in sorted(algorithms.items()):
                click.echo(f"  {name:<{width}}  {algorithm.summary or '-'}  [{plugin}]")
            return
        sections: dict[str, Any] = {"algo": {"name": algo}}
        if env_id:
            sections["env"] = {"id": env_id}
        config = load_config(overrides=overrides, plugin_manager=pm, **sections)
        check_config(config, pm)  # an env id that does not exist, with close matches
        check_fits(config, pm)  # an env the algorithm cannot train on
        click.echo(dump_config(config), nl=False)

    @cli.command()
    @click.argument("config_file", metavar="[CONFIG]", required=False, type=click.Path(dir_okay=False))
    @click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key (repeatable).")
    @click.option("--resume", type=click.Path(file_okay=False), help="Continue the run in RUN_DIR from its last good checkpoint.")
    @click.option("--algo", help="algo.name")
    @click.option("--env", "env_id", help="env.id")
    @click.option("--frames", help="trainer.total_frames (1e6 and 1_000_000 work)")
    @click.option("--seed", help="trainer.seed")
    @click.option("--logger", "logger_names", multiple=True, metavar="NAME", help="Add a logger (repeatable).")
    @click.option("--out", type=click.Path(file_okay=False), help="The run directory, new or empty (default runs/<algo>_<env>_<time>_<id>).")
    @click.option("--force", is_flag=True, help="Start the run in --out afresh, deleting the run that is there.")
    @click.option("--profile", is_flag=True, help="Time every hook of every plugin; print a table at the end (trainer.profile).")
    def train(
        config_file: str | None,
        overrides: tuple[str, ...],
        resume: str | None,
        algo: str | None,
        env_id: str | None,
        frames: str | None,
        seed: str | None,
        logger_names: tuple[str, ...],
        out: str | None,
        force: bool,
        profile: bool,
    ) -> int:
        """Train from CONFIG (YAML), the defaults and the overrides."""
        from .build import build_trainer  # (lazy: torch)
        from .config import train_config

        run_dir = out
        if resume and out is not None and Path(out) != Path(resume):
            raise click.UsageError("--out and --resume name different run directories; --resume continues the run where it is")
        if resume and force:
            raise click.UsageError("--force starts a run afresh and --resume continues it: choose one")
        if resume and config_file is not None:
            raise click.UsageError("--resume continues the run with its own config (RUN_DIR/config.yaml): give no CONFIG, and --set to change a value")
        if resume:
            from .build import check_same_run  # (lazy: torch)
            from .config import apply_overrides

            given = apply_overrides({"algo": {"name": algo}, "env": {"id": env_id}}, overrides)  # (--set algo.name=... too)
            check_same_run(Path(resume), given, pm)
            run_dir = resume
            config_file = str(Path(resume) / CONFIG_FILE)
        config = train_config(
            config_file, overrides, algo=algo, env=env_id, frames=frames, seed=seed, loggers=logger_names, profile=profile, plugin_manager=pm
        )
        warn_broken(pm)
        starting = _interrupt_on_signals()
        trainer = None
        try:
            trainer = build_trainer(config, run_dir=run_dir, plugin_manager=pm, resume=bool(resume), force=force)
            received = _stop_on_signals(trainer)
        except KeyboardInterrupt:  # what was built is closed, a fresh run directory removed
            if trainer is not None:
                trainer.shutdown()
            signum = starting[0] if starting else signal.SIGINT
            _say(f"\nrlctl: {signal.Signals(signum).name}: stopped before training started")
            return SIGNAL_EXIT[signum]
        if trainer.resumed_from is not None:
            _say(f"rlctl: resumed from {trainer.resumed_from} at {trainer.collected_frames} frames")
        try:
            trainer.train()
        except KeyboardInterrupt as err:  # a second signal: at once, mid-batch
            signum = received[-1] if received else signal.SIGINT
            _say(f"\nrlctl: {signal.Signals(signum).name} again: stopped at once{_inside(err)}; {_kept(trainer)}")
            return SIGNAL_EXIT[signum]
        why = f" (stopped: {trainer.stop_reason})" if trainer.stop_reason and not received else ""
        lost = "".join(f"; logger {name} {problem}, so it lacks values of this run" for name, problem in trainer.dropped_loggers.items())
        _say(f"rlctl: {trainer.collected_frames} frames, run directory {trainer.run_dir}{why}{lost}")
        return SIGNAL_EXIT[received[0]] if received else EXIT_FAILED if lost else EXIT_OK

    @cli.command("eval", cls=ReportCommand)
    @click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
    @click.option("--episodes", type=click.IntRange(min=1), default=10, show_default=True, help="Episodes to run.")
    @click.option(
        "--checkpoint", "checkpoint_path", type=click.Path(exists=True), help="A checkpoint of RUN_DIR (default: the last good one)."
    )
    @click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the evaluation env.")
    def evaluate_cmd(
        run_dir: str, episodes: int, checkpoint_path: str | None, seed: int, **evaluate_kwargs: Any
    ) -> dict[str, Any]:
        """Evaluate a run's policy deterministically (mode of its distribution); print a JSON report.
        \f
        Plugins extend this command in ``rl_register_commands``: they append options to
        ``cli.commands["eval"].params`` and wrap its ``callback``, which takes ``run_dir``, ``episodes``,
        ``checkpoint_path`` and ``seed``, passes any other keyword argument (``env_kwargs``, ``on_frame``)
        on to :func:`rlcore._evaluate.evaluate_run`, and returns the report, which the wrapper may extend.
        """
        from .evaluate import evaluate_run  # (lazy: torch)

        return evaluate_run(run_dir, episodes=episodes, checkpoint=checkpoint_path, seed=seed, plugin_manager=pm, **evaluate_kwargs)

    return cli


class ReportCommand(click.Command):
    """A command whose callback returns a report (a mapping), printed as JSON once the callback (and any
    plugin's wrapper of it) has returned."""

    def invoke(self, ctx: click.Context) -> None:
        click.echo(json.dumps(super().invoke(ctx), indent=2))


def _describe(info: PluginInfo) -> str:
    lines = [f"{info.name}  ({info.distribution} {info.version})  {info.status}"]
    if info.hooks:
        lines.append(f"    implements: {', '.join(info.hooks)}")
    for kind, names in sorted(info.provides.items()):
        lines.append(f"    provides {kind}: {', '.join(names)}")
    return "\n".join(lines)


def _watch(trainer: Any, name: str) -> None:
    """Say where the run is stuck (a plugin's hook that never returns) if it has not stopped
    :data:`STOPPING_SECONDS` after the first signal ``name``."""
    main = threading.main_thread().ident or 0  # (set: the main thread has started)

    def check() -> None:
        where = trainer.plugin_manager.running(sys._current_frames().get(main))
        _say(f"rlctl: still running {STOPPING_SECONDS:g} s after the {name}{f', in {where}' if where else ''}; a second {name} stops at once")

    timer = threading.Timer(STOPPING_SECONDS, check)
    timer.daemon = True
    timer.start()
    trainer.after_shutdown(lambda _failure: timer.cancel())


def _inside(error: BaseException) -> str:
    """``" in plugin 'x' (rl-plugin-x) at rl_post_optim"`` where the trainer traced ``error`` to a plugin's hook, else ``""``."""
    where = where_failed(error).removesuffix(": ")
    return f" in {where}" if where else ""


def _kept(trainer: Any) -> str:
    """What a run stopped mid-batch keeps: its last checkpoint, which a resume continues from."""
    saved = trainer.checkpoint.checkpoints() if trainer.checkpoint is not None else []
    if not saved:
        return "no checkpoint was written, so nothing of this run can be resumed"
    return f"the frames since its last checkpoint, {saved[-1].name}, are lost (--resume continues from it)"


def _interrupt_on_signals() -> list[int]:
    """While a run is built: SIGINT or SIGTERM interrupts the build (a ``KeyboardInterrupt``, so that what was
    built is closed, a local Ray cluster stopped among them); the list receives the signal.

    Not under torchrun: a rank may wait in C for its peers while it is built, where a Python handler would
    not run; SIGTERM's default (the process ends at once) stays, and torchrun ends the others.
    """
    received: list[int] = []
    if launched_apart():
        return received

    def handler(signum: int, _frame: Any) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    for signum in SIGNAL_EXIT:
        signal.signal(signum, handler)
    return received


def _stop_on_signals(trainer: Any) -> list[int]:
    """First SIGINT/SIGTERM: finish the batch, checkpoint, flush, exit 130/143. A second one interrupts at once (the
    list then holds both), a hook that never returns too."""
    received: list[int] = []

    def handler(signum: int, _frame: Any) -> None:
        if received:
            received.append(signum)
            raise KeyboardInterrupt
        received.append(signum)
        _say(f"\nrlctl: {signal.Signals(signum).name}: finishing the batch and writing a checkpoint")
        Logger.stopped_by_signal = True  # the loggers end their runs as killed (MLflow's KILLED, W&B's exit code 130)
        trainer.stop()
        _watch(trainer, signal.Signals(signum).name)

    Logger.stopped_by_signal = False
    for signum in SIGNAL_EXIT:
        signal.signal(signum, handler)
    return received


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rlctl``; returns (and exits with) 0 ok, 1 failed (a logger dropped too), 2 bad usage or config, 130/143 stopped by a signal."""
    argv = list(sys.argv[1:] if argv is None else argv)
    only, block = _preparse(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            pm = PluginManager(only=only, block=block)
            code = _check_names(pm, "--plugin" if only is not None else ENV_PLUGINS)
            cli = build_cli(pm) if code is None else None
        except KeyboardInterrupt:
            _say("\nrlctl: interrupted while the plugins were loaded")
            sys.exit(130)
        except RLCoreError as err:  # (RLCORE_PLUGIN_TIMEOUT)
            _echo_error(str(err))
            sys.exit(EXIT_USAGE)
        if cli is not None:
            code = _run(cli, argv, pm)
    sys.exit(code)


def _check_names(pm: PluginManager, source: str) -> int | None:
    """Refuse a name to load that no installed plugin has (``--plugin`` or ``RLCORE_PLUGINS``: nothing would load
    it), and warn of one to block (``--no-plugin``: blocked either way); ``EXIT_USAGE`` on the first, else ``None``."""
    only, block = unknown_names(pm)
    for name in block:
        warnings.warn(f"--no-plugin {name}: no installed plugin has that name", stacklevel=2)
    if not only:
        return None
    _echo_error(f"{source}: no installed plugin is named {only[0]!r} (valid choices: {valid_choices(known_names(pm), only[0]) or 'none installed'})")
    return EXIT_USAGE


def _install_hint(message: str) -> str | None:
    """``"plot comes with rl-plugin-plot: pip install rl-plugin-plot"`` for a command or option of a first-party plugin."""
    for name, dist in first_party_data()["provides"]["commands"].items():
        command, _, option = name.partition(" ")
        missing = (f"No such option: {option}", f"No such option '{option}'") if option else (f"No such command '{command}'",)
        if any(text in message for text in missing):
            return f"{name} comes with {dist}: pip install {dist}"
    return None


def describe_plugins(pm: PluginManager) -> list[PluginInfo]:
    """Every plugin of ``pm`` with what it provides, ``rlctl`` commands too: what ``rlctl plugins list`` shows."""
    return describe(pm, commands=lambda plugin: commands_added(plugin, pm))


def commands_added(plugin: Any, pm: PluginManager) -> list[str]:
    """What ``plugin``'s ``rl_register_commands`` adds to ``rlctl``: new commands, and options of existing ones (``eval --video``)."""
    cli = make_cli(pm)
    before = {name: {p.name for p in command.params} for name, command in cli.commands.items()}
    plugin.rl_register_commands(cli=cli)
    added = [name for name in cli.commands if name not in before]
    for name, params in before.items():
        added += [f"{name} --{p.name.replace('_', '-')}" for p in cli.commands[name].params if p.name not in params]
    return sorted(added)


def build_cli(pm: PluginManager) -> click.Group:
    """``rlctl`` with the kernel's commands and those the plugins of ``pm`` add.

    A plugin whose ``rl_register_commands`` raises, or replaces a command, adds none and is left
    out of the run (its other hooks, envs and hooks by name with it), as one whose registry hook fails.
    """
    cli = make_cli(pm)
    seconds = plugin_timeout()
    for impl in pm.hook.rl_register_commands.get_hookimpls():
        before = dict(cli.commands)
        try:
            within(functools.partial(impl.function, cli=cli), seconds)
            replaced = [name for name, command in before.items() if cli.commands.get(name) is not command]
            if replaced:
                raise ValueError(f"it replaces the command {replaced[0]!r}; add a command of another name")
        except Exception as err:
            cli.commands.clear()  # the kernel's and earlier plugins' commands stay theirs, and this one adds none
            cli.commands.update(before)
            pm.leave_out(impl.plugin_name, f"rl_register_commands failed: {one_line(err)}")
    return cli


def _show_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    """Warnings as one line each: ``rlctl: warning: ...``."""
    _say(f"rlctl: warning: {message}")


#: What failed, by command, for the last line of an unexpected error.
_FAILED = {"train": "training", "eval": "evaluation", "config": "config show", "plugins": "plugins"}  # a plugin's command: "<name> failed"


def _command(argv: list[str]) -> str:
    """The sub-command named in ``argv`` (after the global ``--plugin``/``--no-plugin`` options)."""
    args = iter(argv)
    for arg in args:
        if arg in ("--plugin", "--no-plugin"):
            next(args, None)
        elif not arg.startswith("-"):
            return arg
    return ""


def _run(cli: click.Group, argv: list[str], pm: PluginManager) -> int:
    """Run ``cli`` on ``argv``, ``pm`` its context object (``click.get_current_context().find_object(PluginManager)``); the exit code."""
    try:
        result = cli.main(args=argv, prog_name="rlctl", standalone_mode=False, obj=pm)
    except click.exceptions.Abort:
        return 130
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.UsageError as err:  # one line, as every bad input: the message and where the help is
        command = " ".join(err.ctx.command_path.split()[1:]) if err.ctx is not None else ""
        _echo_error(f"{err.format_message()} (rlctl {command + ' ' if command else ''}--help)")
        hint = _install_hint(err.format_message())
        if hint:
            click.echo(f"rlctl: {hint}", err=True)
        return EXIT_USAGE
    except click.ClickException as err:
        err.show()
        return EXIT_USAGE
    except (ConfigError, RLCoreError) as err:
        _echo_error(str(err))
        return EXIT_USAGE
    except KeyboardInterrupt:
        click.echo("rlctl: interrupted", err=True)
        return 130
    except Exception as err:
        if os.environ.get("RLCORE_TRACEBACK", "1") != "0":
            traceback.print_exc()
        command = _command(argv)
        _echo_error(f"{_FAILED.get(command, command)} failed: {where_failed(err)}{error_line(err)}")
        return EXIT_FAILED
    return result if isinstance(result, int) else EXIT_OK
