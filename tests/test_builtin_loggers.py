"""The builtin ``csv`` and ``console`` loggers (and the kit's MemoryLogger) against the kit's Logger conformance suite."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from rlcore.builtins.console_logger import ConsoleLogger
from rlcore.builtins.csv_logger import HEADER, CSVLogger
from rlcore_testing import LoggerConformance, MemoryLogger, Scalars


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


class TestCSVLogger(LoggerConformance):
    resume_mode = "drop"

    def make_logger(self, log_dir: Path) -> CSVLogger:
        return CSVLogger("run", log_dir)

    def read_back(self, logger: CSVLogger) -> Scalars:  # type: ignore[override]
        values: Scalars = {}
        for row in read_csv(logger.path):
            values.setdefault(row["name"], []).append((int(row["frames"]), float(row["value"])))
        return values


class TestConsoleLogger(LoggerConformance):
    """The console has nothing to read back: the suite checks that every call is accepted."""

    def make_logger(self, log_dir: Path) -> ConsoleLogger:
        return ConsoleLogger("run", log_dir, every=0, keys=(), stream=io.StringIO())


class TestMemoryLogger(LoggerConformance):
    resume_mode = "new_run"  # a new instance remembers nothing of the interrupted one

    def make_logger(self, log_dir: Path) -> MemoryLogger:
        return MemoryLogger("run", log_dir)

    def read_back(self, logger: MemoryLogger) -> Scalars:  # type: ignore[override]
        return logger.values

    def read_back_killed(self, log_dir: Path) -> None:
        return None  # (nothing outside the process)

    def read_hparams(self, logger: MemoryLogger) -> dict[str, object]:  # type: ignore[override]
        return logger.hparams

    def run_status(self, logger: MemoryLogger) -> str | None:  # type: ignore[override]
        return logger.status


def test_csv_file_is_the_documented_format_flushed_as_written(tmp_path: Path) -> None:
    logger = CSVLogger("run", tmp_path)
    logger.log_scalars({"train/episode_return": 1.5, "perf/fps": 100.0}, 64)
    rows = read_csv(tmp_path / "metrics.csv")  # before close: every row is on disk already
    assert tuple(rows[0]) == HEADER
    assert [(r["frames"], r["name"], r["value"]) for r in rows] == [("64", "train/episode_return", "1.5"), ("64", "perf/fps", "100.0")]
    assert all(float(r["wall_time"]) > 0 for r in rows)
    logger.close()


def test_a_resumed_csv_run_appends_under_one_header(tmp_path: Path) -> None:
    first = CSVLogger("run", tmp_path)
    first.log_scalar("a", 1.0, 1)
    first.close()
    second = CSVLogger("run", tmp_path)
    second.resume(1)
    second.log_scalar("a", 2.0, 2)
    second.close()
    lines = (tmp_path / "metrics.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == ",".join(HEADER) and len(lines) == 3


def test_console_prints_the_chosen_metrics_at_most_every_n_frames(tmp_path: Path) -> None:
    stream = io.StringIO()
    logger = ConsoleLogger("run", tmp_path, every=100, keys=("train/episode_return",), stream=stream)
    logger.log_scalars({"train/episode_return": 1.5, "loss/objective": 2.0}, 64)
    logger.log_scalars({"train/episode_return": 2.5}, 128)  # within 100 frames of the last line
    logger.log_scalars({"train/episode_return": 3.5}, 164)
    logger.close()
    assert [line.split() for line in stream.getvalue().splitlines()] == [
        ["64", "train/episode_return=1.5"],
        ["164", "train/episode_return=3.5"],
    ]


def test_a_logger_built_from_python_checks_its_options_as_a_config_does(tmp_path):
    import rlcore

    (tmp_path / "config.yaml").write_text("algo: {name: ppo}\n")
    for filename in ("config.yaml", "checkpoints/m.csv", "../m.csv", "/tmp/m.csv"):
        with pytest.raises(rlcore.ConfigError, match=r"^loggers.csv.filename: expected a relative path inside the run directory"):
            CSVLogger("run", tmp_path, filename=filename)
    assert (tmp_path / "config.yaml").read_text() == "algo: {name: ppo}\n"  # the run's own file, untouched
    with pytest.raises(rlcore.ConfigError, match=r"^unknown key loggers.csv.filenme \(valid choices: filename\)$"):
        rlcore.get_logger("csv", exp_name="run", log_dir=tmp_path, filenme="m.csv")
    logger = rlcore.get_logger("csv", exp_name="run", log_dir=tmp_path, filename="sub/m.csv")
    logger.close()
    assert (tmp_path / "sub" / "m.csv").is_file()
