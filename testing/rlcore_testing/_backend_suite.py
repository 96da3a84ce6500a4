"""``CheckpointBackendConformance``: the :class:`rlcore.CheckpointBackend` contract, as tests any backend runs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from ._state import assert_state_equal, realistic_state

if TYPE_CHECKING:
    from rlcore import CheckpointBackend

#: how :meth:`CheckpointBackendConformance.damage` breaks a checkpoint
Damage = Literal["truncate", "garbage"]


class HooksOwnObject:
    """An object of a hook's own class: picklable, but not a value a checkpoint may hold."""


class CheckpointBackendConformance:
    """The :class:`rlcore.CheckpointBackend` contract as tests: subclass it in a test module as ``TestMyBackend``.

    A subclass implements :meth:`make_backend`; :meth:`read_back` (the backend's format read
    without the backend) and :meth:`damage` (how a checkpoint breaks) are optional::

        class TestMyBackend(CheckpointBackendConformance):
            def make_backend(self, directory, keep_last):
                return MyBackend(directory=directory, keep_last=keep_last)

    The states are :func:`~rlcore_testing.realistic_state`s, compared with
    :func:`~rlcore_testing.assert_state_equal`.
    """

    # ------------------------------------------------------------------ what a subclass provides
    def make_backend(self, directory: Path, keep_last: int) -> CheckpointBackend:
        """A backend keeping ``keep_last`` checkpoints in ``directory``, as the registry's factory builds it.

        :param directory: where its checkpoints live (may not exist yet).
        :param keep_last: how many to keep.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement make_backend(directory, keep_last)")

    def read_back(self, path: Path) -> dict[str, Any] | None:
        """The state of the checkpoint ``path`` read with the format's own reader, not the backend; ``None``: not checked.

        :param path: a checkpoint the backend wrote.
        """
        return None

    def damage(self, checkpoint: Path, how: Damage) -> None:
        """Break a checkpoint as a crash or a bad disk would: by default its largest file is cut to half
        its size (``"truncate"``) or overwritten with as many bytes of garbage (``"garbage"``).

        :param checkpoint: a checkpoint file or directory.
        :param how: the kind of damage.
        """
        files = [checkpoint] if checkpoint.is_file() else [p for p in checkpoint.rglob("*") if p.is_file()]
        target = max(files, key=lambda p: p.stat().st_size)
        size = target.stat().st_size
        if how == "truncate":
            target.write_bytes(target.read_bytes()[: size // 2])
        else:
            target.write_bytes((b"\x00garbage\xff" * (size // 10 + 1))[:size])

    # ------------------------------------------------------------------ helpers
    def _backend(self, directory: Path, keep_last: int = 3) -> CheckpointBackend:
        from rlcore import CheckpointBackend

        backend = self.make_backend(directory, keep_last)
        assert isinstance(backend, CheckpointBackend), f"{type(backend).__name__} is not an rlcore.CheckpointBackend"
        return backend

    @staticmethod
    def _names(directory: Path) -> list[str]:
        return sorted(p.name for p in directory.iterdir())

    # ------------------------------------------------------------------ the contract
    def test_a_realistic_state_round_trips(self, tmp_path: Path) -> None:
        backend = self._backend(tmp_path / "checkpoints")
        assert (backend.directory, backend.keep_last) == (tmp_path / "checkpoints", 3)
        assert backend.checkpoints() == []
        state = realistic_state()
        path = backend.save(state, 4096)
        assert path == tmp_path / "checkpoints" / f"ckpt-{4096:012d}{backend.suffix}"
        loaded_path, loaded = backend.load()
        assert loaded_path == path
        assert_state_equal(state, loaded)
        native = self.read_back(path)
        if native is not None:  # what is on disk: the state and the checksum of its content
            from rlcore import content_checksum

            assert native.pop(backend.checksum_key) == content_checksum(state)
            assert_state_equal(state, native)

    def test_load_picks_the_newest_and_keep_last_prunes_the_oldest(self, tmp_path: Path) -> None:
        backend = self._backend(tmp_path, keep_last=2)
        for frames in (100, 200, 300, 400):
            backend.save({"frames": frames, "weights": [float(frames)] * 3}, frames)
        names = [f"ckpt-{frames:012d}{backend.suffix}" for frames in (300, 400)]
        assert [p.name for p in backend.checkpoints()] == names
        assert self._names(tmp_path) == names  # nothing else is left behind
        path, state = backend.load()
        assert path.name == names[-1] and state == {"frames": 400, "weights": [400.0] * 3}
        assert backend.load(backend.checkpoints()[0])[1]["frames"] == 300

    @pytest.mark.parametrize("how", ["truncate", "garbage"])
    def test_a_damaged_newest_is_skipped_with_a_warning_naming_it(self, tmp_path: Path, how: Damage) -> None:
        backend = self._backend(tmp_path)
        good = realistic_state(seed=1)
        older = backend.save(good, 100)
        newest = backend.save(realistic_state(seed=2), 200)
        self.damage(newest, how)
        with pytest.warns(UserWarning, match=re.escape(newest.name)):
            path, loaded = backend.load()
        assert path == older
        assert_state_equal(good, loaded)

    def test_the_save_after_resuming_past_a_damaged_newest_is_kept(self, tmp_path: Path) -> None:
        from rlcore import CheckpointError

        backend = self._backend(tmp_path, keep_last=1)
        backend.save({"frames": 100}, 100)
        newest = backend.save({"frames": 300}, 300)  # keep_last=1: only this one is left
        self.damage(newest, "garbage")
        with pytest.warns(UserWarning, match=re.escape(newest.name)), pytest.raises(CheckpointError):
            backend.load()  # nothing readable: the run restarts from scratch, and saves at 200 frames
        saved = backend.save({"frames": 200}, 200)
        assert backend.checkpoints() == [saved]  # the damaged newer one is pruned, never the one just saved
        assert backend.load() == (saved, {"frames": 200})

    @pytest.mark.parametrize("how", ["truncate", "garbage"])
    def test_a_damaged_checkpoint_is_refused_in_one_line_naming_it(self, tmp_path: Path, how: Damage) -> None:
        from rlcore import CheckpointError

        backend = self._backend(tmp_path)
        path = backend.save(realistic_state(), 1)
        self.damage(path, how)
        with pytest.raises(CheckpointError) as info:
            backend.load(path)
        message = str(info.value)
        assert str(path) in message and "\n" not in message, message

    def test_missing_and_empty_checkpoints_are_refused(self, tmp_path: Path) -> None:
        from rlcore import CheckpointError

        backend = self._backend(tmp_path / "checkpoints")
        with pytest.raises(CheckpointError):
            backend.load()  # no checkpoint at all
        with pytest.raises(CheckpointError):
            backend.load(tmp_path / "checkpoints" / f"ckpt-{1:012d}{backend.suffix}")
        (tmp_path / "empty-file").write_bytes(b"")
        (tmp_path / "empty-dir").mkdir()
        for empty in (tmp_path / "empty-file", tmp_path / "empty-dir"):
            with pytest.raises(CheckpointError):
                backend.load(empty)

    def test_a_failed_write_leaves_no_checkpoint_under_a_real_name(self, tmp_path: Path) -> None:
        backend = self._backend(tmp_path)
        first = backend.save({"frames": 1}, 1)
        write = backend.write

        def write_then_crash(state: Any, path: Path) -> None:
            write(state, path)  # complete, but never renamed into place
            raise OSError("simulated crash after the write")

        backend.write = write_then_crash  # type: ignore[method-assign]
        with pytest.raises(OSError, match="simulated crash"):
            backend.save({"frames": 2}, 2)
        assert self._names(tmp_path) == [first.name]
        assert backend.load() == (first, {"frames": 1})

    def test_a_state_it_cannot_store_fails_at_save_naming_where(self, tmp_path: Path) -> None:
        backend = self._backend(tmp_path)
        first = backend.save({"frames": 1}, 1)
        with pytest.raises(TypeError, match="mine"):
            backend.save({"modules": {"mine": {"value": HooksOwnObject()}}}, 2)
        assert self._names(tmp_path) == [first.name]  # the last good checkpoint is kept

    def test_keep_last_must_be_positive(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="keep_last"):
            self.make_backend(tmp_path, 0)


__all__ = ["CheckpointBackendConformance", "Damage"]
