"""rl-plugin-sweep: experiments over seeds and Optuna sweeps, for rl-core.

- ``rlctl train CONFIG --seeds 0-9 [--jobs N] [--out EXP_DIR]`` trains the config once per seed, ``N`` runs at a
  time (one per core by default), each a normal run directory in one experiment directory. The same command
  again skips the finished runs and resumes the others.
- ``rlctl sweep SWEEP.yaml`` searches config keys with Optuna (TPE, median pruning on the evaluation hook's
  values), each trial an experiment; the study is a SQLite file in the sweep directory, so a stopped sweep
  continues. ``rlctl sweep SWEEP.yaml --best`` prints the best config.
- ``--backend ray [--address ADDR]`` runs the same runs as Ray actors (``pip install rl-plugin-sweep[ray]``).

Every run is an ``rlctl train`` process of its own: the plugin places, watches and stops them, and never trains.
Importing this module imports neither Optuna nor torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcore import hookimpl, lazy_getattr

if TYPE_CHECKING:
    import click

    from ._experiment import Experiment, parse_seeds, run_seeds
    from ._sweep import Sweep, SweepOptions, read_sweep

__version__ = "0.1.0"
_LAZY = {
    "Experiment": "._experiment",
    "parse_seeds": "._experiment",
    "run_seeds": "._experiment",
    "Sweep": "._sweep",
    "SweepOptions": "._sweep",
    "read_sweep": "._sweep",
}
__all__ = ["Experiment", "Sweep", "SweepOptions", "parse_seeds", "read_sweep", "run_seeds"]

__getattr__ = lazy_getattr(__name__, _LAZY)


@hookimpl
def rl_register_commands(cli: click.Group) -> None:
    """``rlctl train --seeds`` and ``rlctl sweep``."""
    from ._command import add_seeds, sweep

    add_seeds(cli.commands["train"])
    cli.add_command(sweep)
