"""``rlctl`` run by a test, in this process (as pytester's ``runpytest``) or in a process of its own."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess as _subprocess
import sys
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

#: the signals whose handlers ``rlctl train`` sets while it runs
_HANDLED = (signal.SIGINT, signal.SIGTERM)


class RunResult(NamedTuple):
    """What a run of ``rlctl`` left: its exit code and what it printed (named as a ``CompletedProcess``'s fields)."""

    returncode: int
    stdout: str
    stderr: str


def run_rlctl(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    subprocess: bool = False,
    timeout: float = 120,
) -> RunResult:
    """Run ``rlctl ARGS`` as its console script does; return its exit code, stdout and stderr.

    By default in this process: the entry point :func:`rlcore.rlctl` with ``env`` added to the
    environment, ``cwd`` as the working directory and stdout/stderr captured, all restored after it,
    the signal handlers and torch's thread count too. That spares each call the seconds a new process
    spends importing torch. ``subprocess=True`` runs ``python -m rlcore ARGS`` instead, for what only a
    process of its own shows: what its start imports, a signal, a kill, an exit in a plugin's import.
    ``timeout`` (seconds) bounds a subprocess only.
    """
    env = {"RLCORE_TRACEBACK": "1", **(env or {})}
    if subprocess:
        done = _subprocess.run(
            [sys.executable, "-m", "rlcore", *args],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            cwd=cwd,
            timeout=timeout,
            check=False,
        )
        return RunResult(done.returncode, done.stdout, done.stderr)
    from rlcore import rlctl

    out, err = io.StringIO(), io.StringIO()
    with _restored(env, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rlctl(list(args))
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
        else:
            code = 0
    return RunResult(code, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _restored(env: Mapping[str, str], cwd: str | os.PathLike[str] | None) -> Iterator[None]:
    """``env`` set and ``cwd`` entered for the block; they, the signal handlers, torch's threads and the warning filters restored after it."""
    environ, here = dict(os.environ), Path.cwd()
    handlers = {signum: signal.getsignal(signum) for signum in _HANDLED}
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    os.environ.update(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        with warnings.catch_warnings():
            yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)
        for signum, handler in handlers.items():
            if handler is not None:  # (None: a handler set outside Python, which stays)
                signal.signal(signum, handler)
        torch = sys.modules.get("torch")
        if torch is not None and threads is not None:
            torch.set_num_threads(threads)
