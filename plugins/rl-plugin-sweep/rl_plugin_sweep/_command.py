"""``rlctl train --seeds`` and ``rlctl sweep`` (light: click only; Optuna and the runs are imported when they run)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import click

from rlcore import PluginManager

from ._jobs import Backend, LocalProcesses

BACKENDS = ("local", "ray")


def _say(text: str) -> None:
    click.echo(f"rlctl: {text}", err=True)


def _context() -> tuple[PluginManager, list[str]]:
    """The run's plugin manager, and the root options that chose its plugins (each job gets them too)."""
    ctx = click.get_current_context()
    root = ctx.find_root().params
    args = [arg for name in root.get("plugins", ()) for arg in ("--plugin", name)]
    args += [arg for name in root.get("blocked", ()) for arg in ("--no-plugin", name)]
    return ctx.find_object(PluginManager) or PluginManager(), args


def _backend(name: str, address: str | None, root: list[str], jobs: int | None) -> Backend:
    if name == "ray":
        try:
            from ._ray import RayActors  # (lazy: ray)
        except ImportError as err:
            raise click.UsageError(f"--backend ray needs Ray and rl-plugin-ray ({err}): pip install 'rl-plugin-sweep[ray]'") from None
        return RayActors(address, root, jobs)
    if address is not None:
        raise click.UsageError("--address names a Ray cluster: give it with --backend ray")
    return LocalProcesses(root)


BACKEND_OPTIONS = [
    click.Option(["--jobs"], type=click.IntRange(min=1), help="Runs at a time (default: one per core here, per CPU of a Ray cluster)."),
    click.Option(["--backend"], type=click.Choice(BACKENDS), default="local", show_default=True, help="Where the runs go: local processes, or Ray actors."),
    click.Option(["--address"], metavar="ADDR", help="--backend ray: the Ray cluster to join (default: a local one started for the runs)."),
]


def add_seeds(train: click.Command) -> None:
    """``rlctl train CONFIG --seeds 0-9 [--jobs N]``: the config over several seeds, one experiment directory (``--out``)."""
    train.params += [
        click.Option(["--seeds"], metavar="SEEDS", help="Train one run per seed (0-9, 0,3,7) into one experiment directory, --out (rl-plugin-sweep)."),
        *BACKEND_OPTIONS,
    ]
    alone = train.callback
    assert alone is not None

    @functools.wraps(alone)
    def callback(seeds: str | None, jobs: int | None, backend: str, address: str | None, **kwargs: Any) -> int:
        if seeds is None:
            given = [name for name, value in (("--jobs", jobs), ("--address", address)) if value is not None] + (["--backend"] if backend != "local" else [])
            if given:
                raise click.UsageError(f"{given[0]} runs seeds: give --seeds too")
            return alone(**kwargs)
        for flag, name in (("--seed", "seed"), ("--resume", "resume"), ("--force", "force")):
            if kwargs[name]:
                raise click.UsageError(f"{flag} is for one run; with --seeds the same command resumes the experiment")
        from rlcore import train_config  # (lazy: the config module imports gymnasium, which rlctl --help needs not)

        from ._experiment import Experiment, default_directory, parse_seeds, run_seeds  # (lazy: as train_config)

        chosen = parse_seeds(seeds)
        pm, root = _context()
        config = train_config(
            kwargs["config_file"], kwargs["overrides"], algo=kwargs["algo"], env=kwargs["env_id"], frames=kwargs["frames"],
            loggers=kwargs["logger_names"], profile=kwargs["profile"], plugin_manager=pm,
        )
        config["trainer"]["seed"] = None
        experiment = Experiment(kwargs["out"] or default_directory(config), config)
        runner = _backend(backend, address, root, jobs)
        try:
            return run_seeds(experiment, chosen, runner, jobs or runner.slots, _say)
        finally:
            runner.close()

    train.callback = callback


@click.command("sweep")
@click.argument("sweep_file", metavar="SWEEP.yaml", type=click.Path(dir_okay=False))
@click.option("--out", type=click.Path(file_okay=False), help="The sweep directory (default sweeps/<SWEEP>); the same one continues a sweep.")
@click.option("--best", is_flag=True, help="Print the best finished trial's config, as YAML that rlctl train takes, and run nothing.")
def sweep(sweep_file: str, out: str | None, best: bool, jobs: int | None, backend: str, address: str | None) -> int:
    """Search config keys with Optuna (rl-plugin-sweep): SWEEP.yaml is a config with a sweep section.

    \b
    sweep:
      space: {optim.lr: {loguniform: [1.0e-5, 1.0e-2]}, algo.clip_range: {choice: [0.1, 0.2, 0.3]}}
      metric: eval/episode_return
      trials: 12
    """
    from ._sweep import Sweep, read_sweep  # (lazy: optuna)

    config, options = read_sweep(sweep_file)
    pm, root = _context()
    directory = Path(out) if out else Path("sweeps") / Path(sweep_file).stem
    if best:
        if not directory.is_dir():
            raise click.UsageError(f"{directory}: no sweep there (--out names the sweep directory)")
        click.echo(Sweep(directory, config, options, pm).best().read_text(encoding="utf-8"), nl=False)
        return 0
    runner = _backend(backend, address, root, jobs)
    try:
        return Sweep(directory, config, options, pm).run(runner, jobs or runner.slots, _say)
    finally:
        runner.close()


sweep.params += BACKEND_OPTIONS
