"""``rlctl sweep``: Optuna's search over config keys, each trial an experiment of the trial's config over the sweep's seeds.

The sweep file is a config as ``rlctl train`` takes it, with a ``sweep`` section beside the others::

    sweep:
      space:
        optim.lr: {loguniform: [1.0e-5, 1.0e-2]}
        algo.clip_range: {choice: [0.1, 0.2, 0.3]}
      metric: eval/episode_return   # the objective: its last value in each run, the mean over the seeds
      direction: maximize
      trials: 12
      seeds: [0]

The study lives in ``SWEEP_DIR/optuna.db`` (SQLite: ``optuna-dashboard sqlite:///SWEEP_DIR/optuna.db`` opens it),
trial k in ``SWEEP_DIR/trial_<k>/`` (an experiment directory). While a trial runs, each new value of ``metric``
that all its seeds have logged is reported to Optuna (their mean, at that frame count); a trial the pruner gives up
on is stopped. A sweep stopped midway is continued by the same command: its unfinished trials resume from their
checkpoints, and new ones are asked for until ``trials`` have ended.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from rlcore import ConfigError, PluginManager, load_config, read_metrics, shown, validate_options

from ._experiment import Experiment, first_difference
from ._jobs import SIGNAL_EXIT, Backend, Job, last_error, run_jobs

STORAGE = "optuna.db"
STUDY = "sweep"
#: a search space entry's kinds, and what each takes
KINDS = {"uniform": "[low, high]", "loguniform": "[low, high]", "int": "[low, high]", "choice": "[value, ...]"}
#: an attribute of a trial: its directory's name
TRIAL_DIR = "trial_dir"


@dataclass
class SweepOptions:
    """The ``sweep`` section of a sweep file.

    :param space: ``{dotted config key: {kind: values}}``, kinds ``uniform``, ``loguniform``, ``int`` (``[low, high]``) and ``choice`` (a list).
    :param metric: the metric each run's objective is (its last value), and the pruner watches.
    :param direction: ``maximize`` or ``minimize``.
    :param trials: trials in all (finished, pruned and failed ones count).
    :param seeds: the seeds each trial trains; its objective is the mean over them.
    :param sampler: ``tpe`` or ``random``.
    :param pruner: ``median`` (Optuna's MedianPruner) or ``none``.
    :param startup_trials: trials that end before the pruner prunes any.
    :param seed: the sampler's seed.
    """

    space: dict[str, dict[str, Any]] = field(default_factory=dict)
    metric: str = "eval/episode_return"
    direction: Literal["maximize", "minimize"] = "maximize"
    trials: int = 20
    seeds: list[int] = field(default_factory=lambda: [0])
    sampler: Literal["tpe", "random"] = "tpe"
    pruner: Literal["median", "none"] = "median"
    startup_trials: int = 4
    seed: int = 0


def read_sweep(path: str | os.PathLike[str]) -> tuple[dict[str, Any], SweepOptions]:
    """The config of a sweep file (without its ``sweep`` section) and its options.

    :raises ConfigError: when the file cannot be read, has no ``sweep`` section, or an option or space entry is wrong.
    """
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ConfigError(f"{path}: cannot be read ({getattr(err, 'strerror', None) or str(err).splitlines()[0]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("sweep"), dict):
        raise ConfigError(f"{path}: has no sweep section (sweep: {{space: {{optim.lr: {{loguniform: [1.0e-5, 1.0e-2]}}}}}})")
    section = data.pop("sweep")
    options = SweepOptions(**validate_options("sweep", SweepOptions, section))
    if not options.space:
        raise ConfigError("sweep.space: name at least one key to search, e.g. optim.lr: {loguniform: [1.0e-5, 1.0e-2]}")
    for key, entry in options.space.items():
        where = f"sweep.space.{key}"
        if not isinstance(entry, dict) or len(entry) != 1 or next(iter(entry)) not in KINDS:
            raise ConfigError(f"{where}: expected one of {', '.join(f'{{{k}: {v}}}' for k, v in KINDS.items())}")
        kind, values = next(iter(entry.items()))
        if not isinstance(values, list) or not values or (kind != "choice" and len(values) != 2):
            raise ConfigError(f"{where}.{kind}: expected {KINDS[kind]}, got {shown(values)}")
        if kind != "choice" and not (all(isinstance(v, (int, float)) for v in values) and values[0] < values[1]):
            raise ConfigError(f"{where}.{kind}: expected numbers low < high, got {shown(values)}")
        if kind == "loguniform" and values[0] <= 0:
            raise ConfigError(f"{where}.loguniform: expected 0 < low < high, got {shown(values)}")
    if options.trials < 1 or not options.seeds:
        raise ConfigError("sweep.trials: at least 1" if options.trials < 1 else "sweep.seeds: at least one seed")
    return data, options


def suggest(trial: Any, space: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """A value for each key of ``space``, from ``trial`` (Optuna's), named by the key."""
    values: dict[str, Any] = {}
    for key, entry in space.items():
        (kind, bounds), = entry.items()
        if kind == "choice":
            values[key] = trial.suggest_categorical(key, bounds)
        elif kind == "int":
            values[key] = trial.suggest_int(key, int(bounds[0]), int(bounds[1]))
        else:
            values[key] = trial.suggest_float(key, float(bounds[0]), float(bounds[1]), log=kind == "loguniform")
    return values


def trial_config(base: Path, values: Mapping[str, Any], pm: PluginManager) -> dict[str, Any]:
    """The config of a trial: the sweep's, with ``values`` set as ``--set`` sets them (checked as ``rlctl train`` checks them)."""
    return load_config(base, overrides=[f"{key}={json.dumps(value)}" for key, value in values.items()], plugin_manager=pm)


def final_value(run_dir: Path, metric: str) -> float:
    """The last value of ``metric`` in a run's ``metrics.csv``.

    :raises ConfigError: when the run did not log it.
    """
    series = read_metrics(run_dir)
    if metric not in series or not series[metric][1]:
        raise ConfigError(f"sweep.metric: run {run_dir} logged no {metric} (it logged {', '.join(sorted(series)) or 'nothing'})")
    return float(series[metric][1][-1])


class Sweep:
    """A sweep directory and its Optuna study, created or continued.

    :param path: the sweep directory.
    :param config: the sweep file's config (without ``sweep``).
    :param options: its ``sweep`` section.
    :param pm: the plugins that resolve the trials' configs.
    """

    def __init__(self, path: str | os.PathLike[str], config: Mapping[str, Any], options: SweepOptions, pm: PluginManager) -> None:
        import optuna  # (lazy: a second of imports, for a sweep only)

        optuna.logging.set_verbosity(logging.WARNING)
        self.path, self.options, self.pm = Path(path).absolute(), options, pm
        self.path.mkdir(parents=True, exist_ok=True)
        self.base = self.path / "base.yaml"
        text = yaml.safe_dump(dict(config), sort_keys=False)
        key = first_difference(yaml.safe_load(self.base.read_text(encoding="utf-8")), yaml.safe_load(text)) if self.base.is_file() else None
        if key is not None:
            raise ConfigError(f"{self.path}: holds a sweep of another config ({key} differs); choose another --out")
        self.base.write_text(text, encoding="utf-8")
        lowest = {key: next(iter(entry.values()))[0] for key, entry in options.space.items()}
        trial_config(self.base, lowest, pm)  # (a bad config or key is one line now, not a failure in every trial)
        sampler = optuna.samplers.TPESampler(seed=options.seed) if options.sampler == "tpe" else optuna.samplers.RandomSampler(seed=options.seed)
        pruner = optuna.pruners.MedianPruner(n_startup_trials=options.startup_trials) if options.pruner == "median" else optuna.pruners.NopPruner()
        self.study = optuna.create_study(
            storage=f"sqlite:///{self.path / STORAGE}", study_name=STUDY, direction=options.direction,
            sampler=sampler, pruner=pruner, load_if_exists=True,
        )

    def best(self) -> Path:
        """The config file of the best finished trial.

        :raises ConfigError: when no trial has finished.
        """
        import optuna  # (lazy: a second of imports, for a sweep only)

        done = [t for t in self.study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
        if not done:
            raise ConfigError(f"{self.path}: no trial has finished yet (rlctl sweep runs them)")
        return self.path / self.study.best_trial.user_attrs[TRIAL_DIR] / "config.yaml"

    def run(self, backend: Backend, slots: int, say: Callable[[str], None]) -> int:
        """Run trials until ``options.trials`` have ended: the unfinished ones of an earlier sweep first.

        :return: 0, or 130/143 when a signal stopped the sweep.
        """
        import optuna  # (lazy: a second of imports, for a sweep only)

        State = optuna.trial.TrialState
        trials = self.study.get_trials(deepcopy=False)
        ended = sum(t.state in (State.COMPLETE, State.PRUNED, State.FAIL) for t in trials)
        unfinished = [optuna.trial.Trial(self.study, t._trial_id) for t in trials if t.state == State.RUNNING]
        say(f"sweep {self.path}: {ended} of {self.options.trials} trials ended before, {len(unfinished)} to resume, {slots} runs at a time")

        def jobs() -> Iterator[Job]:
            while True:
                started = len(self.study.get_trials(deepcopy=False))  # (ended, running and resumed)
                trial = unfinished.pop(0) if unfinished else self.study.ask() if started < self.options.trials else None
                if trial is None:
                    return
                yield from self._jobs(trial, say)

        stopped = run_jobs(jobs(), backend, slots, say)
        counts = {state.name.lower(): sum(t.state == state for t in self.study.get_trials(deepcopy=False)) for state in State}
        say("trials: " + ", ".join(f"{n} {name}" for name, n in counts.items() if n))
        if stopped is not None:
            say("stopped; the same command continues the sweep")
            return stopped
        if not counts["complete"]:
            say("no trial finished")
            return 1
        say(f"best: trial {self.study.best_trial.number}, {self.options.metric} {self.study.best_value:g}, {self.study.best_params}")
        return 0

    def _jobs(self, trial: Any, say: Callable[[str], None]) -> Iterator[Job]:
        """One job per seed of ``trial``, watched together: reported to the pruner, stopped together, told Optuna once all end."""
        import optuna  # (lazy: a second of imports, for a sweep only)

        name = f"trial_{trial.number:04d}"
        trial.set_user_attr(TRIAL_DIR, name)
        values = suggest(trial, self.options.space)
        try:
            config = trial_config(self.base, values, self.pm)
        except ConfigError as err:
            say(f"trial {trial.number}: failed: {err}")
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            return
        config["trainer"]["seed"] = None
        experiment = Experiment(self.path / name, config)
        watched = _Watched(trial, [experiment.run_dir(seed) for seed in self.options.seeds], self.options.metric)
        codes: dict[int, int] = {}

        def done(seed: int, code: int, _stopped: bool = False) -> None:
            codes[seed] = code
            if code == 0:
                experiment.finish(seed)
            if len(codes) < len(self.options.seeds):
                return
            if watched.pruned:
                say(f"trial {trial.number}: pruned at {watched.last_step} frames")
                self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            elif any(c in SIGNAL_EXIT.values() for c in codes.values()):
                pass  # (stopped by a signal: resumed by the next sweep)
            elif any(codes.values()):
                bad = next(s for s, c in codes.items() if c)
                say(f"trial {trial.number}: failed: seed {bad}: {last_error(experiment.log(bad))}")
                self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                value = sum(final_value(experiment.run_dir(s), self.options.metric) for s in self.options.seeds) / len(self.options.seeds)
                say(f"trial {trial.number}: {self.options.metric} {value:g} with {values}")
                self.study.tell(trial, value)

        say(f"trial {trial.number}: {values}")
        for seed in self.options.seeds:
            if seed in experiment.finished:
                done(seed, 0)
                continue
            job = experiment.job(seed, functools.partial(done, seed))
            job.watch = watched.poll
            job.name = f"trial {trial.number} seed {seed}"
            yield job


class _Watched:
    """The intermediate values of one trial: each frame count that every seed's run has logged ``metric`` at, reported once
    (the mean over the seeds); :attr:`pruned` once the pruner gives up on the trial."""

    def __init__(self, trial: Any, runs: list[Path], metric: str) -> None:
        self.trial, self.runs, self.metric = trial, runs, metric
        self.reported = set(trial.storage.get_trial(trial._trial_id).intermediate_values)
        self.pruned = False
        self.last_step = 0

    def poll(self) -> bool:
        if self.pruned:
            return True
        curves = []
        for run in self.runs:
            try:
                with warnings.catch_warnings():  # (a row being written as it is read)
                    warnings.simplefilter("ignore")
                    frames, values = read_metrics(run).get(self.metric, ([], []))
            except (OSError, ConfigError):
                frames, values = [], []
            curves.append(dict(zip(frames, values)))
        common = set.intersection(*(set(curve) for curve in curves)) - self.reported
        for step in sorted(common):
            value = sum(curve[step] for curve in curves) / len(curves)
            if math.isfinite(value):
                self.trial.report(value, int(step))
            self.reported.add(step)
            self.last_step = int(step)
            if self.trial.should_prune():
                self.pruned = True
                return True
        return False
