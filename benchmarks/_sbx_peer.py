"""SBX (Stable-Baselines3 in JAX, ``sbx-rl``) as the third peer of ``offpolicy_speed_vs_sb3.py``.

Two sides, one file:

- in rl-core's interpreter, :func:`ensure_sbx` makes a venv of SBX's own under the temp dir (once; reused while its
  pins and constraints are the same) and :func:`run_sbx` trains one run in a fresh process of it, pinned to one core with one thread;
- in that venv's interpreter, ``python _sbx_peer.py ALGO SEED FRAMES OUT`` (:func:`child`) trains SBX's DQN or SAC
  with the keyword arguments that SB3's get (:func:`offpolicy_speed_vs_sb3.sb3_arguments`), through the same
  evaluation loop (:func:`offpolicy_speed_vs_sb3.learn_evaluated`), and writes its row as JSON to OUT.

The venv has no rl-core: the child imports ``offpolicy_speed_vs_sb3`` (whose top level is the standard library and
this module) for the pinned hyperparameters, the clock and the evaluations, and nothing of rl-core. Its torch (SB3,
which SBX builds on, samples its replay buffer in torch) is the CPU wheel that the repository's ``constraints.txt``
pins, so that no CUDA build is pulled.

How JAX's compile time is measured: :class:`CompileTimer` listens to ``jax.monitoring``'s time spans of the three
stages of every compilation (tracing to a jaxpr, lowering to MLIR, XLA's backend compile; JAX records them for each
jitted function, and for each primitive run eagerly, at its first call with new shapes) and adds up the wall time
their union covers while training, the evaluations left out. The compilations stay in the training seconds (and
so in the frames/s); the column shows how much of them they were. A second, rough measure is printed per run: the
first call of SBX's ``train`` (which compiles the update) less the median of the later ones.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: SBX's venv, created once and reused while :data:`SBX_REQUIREMENTS` and the constraints stay the same
SBX_VENV = Path(tempfile.gettempdir()) / "rlcore-bench-sbx-venv"
#: what is installed into it: SBX, the JAX it runs on, its networks and optimisers, and the SB3 it builds on (the
#: version the torch peer runs); tfp-nightly (SAC's distributions), rich and tqdm as the resolver picks them
SBX_REQUIREMENTS = ("sbx-rl==0.28.0", "jax==0.10.2", "jaxlib==0.10.2", "flax==0.12.8", "optax==0.2.8", "stable-baselines3==2.9.2")
#: the repository's pins (torch's CPU wheel, gymnasium, numpy: the versions rl-core runs with), passed to pip with -c
CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints.txt"
#: written into the venv once the install succeeded: the requirements it holds and the constraints they were installed under
MARKER = "rlcore-bench-requirements.txt"
#: one thread for JAX (XLA's CPU client, Eigen's pool), OpenMP, and the BLAS of numpy; JAX on the CPU only
SINGLE_THREAD = {
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "JAX_PLATFORMS": "cpu",
}
#: jax.monitoring's events of a compilation: tracing, lowering, XLA's compile
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def venv_python(venv: Path = SBX_VENV) -> Path:
    """The interpreter of ``venv``."""
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_sbx(venv: Path = SBX_VENV) -> Path:
    """SBX's venv, created and installed if it is not there yet (or holds other pins or constraints); return its interpreter.

    ``python -m venv``, then that venv's ``pip install -c constraints.txt`` of :data:`SBX_REQUIREMENTS`; a marker
    file written last says the install is complete, so an interrupted one is redone.
    """
    python, marker = venv_python(venv), venv / MARKER
    constraints = ["-c", str(CONSTRAINTS)] if CONSTRAINTS.exists() else []
    wanted = "\n".join(SBX_REQUIREMENTS) + "\n\n" + (CONSTRAINTS.read_text() if constraints else "")
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    print(f"# installing SBX into a venv at {venv} (once): {' '.join(SBX_REQUIREMENTS)}", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    if not constraints:
        print(f"# warning: no {CONSTRAINTS}: torch may come as a CUDA build", file=sys.stderr)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *constraints, *SBX_REQUIREMENTS], check=True)
    check = "import sbx, jax, torch; print(sbx.__version__, jax.__version__, torch.__version__, torch.version.cuda)"
    versions = subprocess.run([str(python), "-c", check], check=True, capture_output=True, text=True, env=single_thread_env()).stdout.split()
    print(f"# SBX {versions[0]}, jax {versions[1]}, torch {versions[2]} (CUDA: {versions[3]})", file=sys.stderr, flush=True)
    marker.write_text(wanted)
    return python


def single_thread_env() -> dict[str, str]:
    """This process's environment for SBX's: :data:`SINGLE_THREAD` set, and no PYTHONPATH or PYTHONHOME (its venv's packages only)."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    return {**env, **SINGLE_THREAD}


def pin_to_core(core: int | None) -> None:
    """Pin this process (each of its threads; those it starts later inherit it) to ``core``; nothing with None or off Linux."""
    if core is None or not hasattr(os, "sched_setaffinity"):
        return
    try:
        threads = [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for tid in threads:
        with contextlib.suppress(ProcessLookupError):  # the thread ended meanwhile
            os.sched_setaffinity(tid, {core})


def run_sbx(algo: str, seed: int, frames: int, core: int | None = None) -> dict[str, Any]:
    """Train SBX's ``algo`` in a fresh process of its venv, on ``core`` alone with one thread; return its row."""
    python = ensure_sbx()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "row.json"
        subprocess.run(
            [str(python), str(Path(__file__).resolve()), algo, str(seed), str(frames), str(out)],
            env=single_thread_env(),
            preexec_fn=lambda: pin_to_core(core),  # in the child, before it starts: the whole process on that core
            check=True,
        )
        return json.loads(out.read_text())


# --- the child's side: run in SBX's venv --------------------------------------------------------------------------


class CompileTimer:
    """Wall seconds that JAX spends compiling while :attr:`counting`: the union of the time spans of :data:`COMPILE_EVENTS`."""

    def __init__(self) -> None:
        import jax.monitoring

        self.counting = False
        self.spans: list[tuple[float, float]] = []
        jax.monitoring.register_event_time_span_listener(self._on_span)

    def _on_span(self, event: str, start: float, end: float, **kwargs: Any) -> None:
        if self.counting and event in COMPILE_EVENTS:
            self.spans.append((start, end))

    def seconds(self) -> float:
        """The time the spans cover, each moment once (a lowering may run inside a tracing, and so on)."""
        total, reach = 0.0, float("-inf")
        for start, end in sorted(self.spans):
            if end > reach:
                total += end - max(start, reach)
                reach = end
        return total


def adam_clipped(learning_rate: float, eps: float, max_grad_norm: float) -> Any:
    """Adam after clipping the gradients to a global norm of ``max_grad_norm``: SB3's DQN's ``max_grad_norm``
    (``torch.nn.utils.clip_grad_norm_`` over all the Q-network's parameters), which SBX's DQN does not take."""
    import optax

    return optax.chain(optax.clip_by_global_norm(max_grad_norm), optax.adam(learning_rate, eps=eps))


def sbx_model(algo: str, seed: int) -> Any:
    """SBX's ``algo`` with the keyword arguments SB3's gets (not trained yet); where SBX differs, the same effect."""
    import flax.linen as nn
    from offpolicy_speed_vs_sb3 import SETTINGS, sb3_arguments
    from sbx import DQN, SAC

    kwargs = sb3_arguments(algo, seed)
    policy = kwargs["policy_kwargs"]
    policy["activation_fn"] = nn.relu
    if algo == "dqn":
        # SBX's Q-network is two hidden layers of net_arch[0] units
        if len(policy["net_arch"]) != 2 or len(set(policy["net_arch"])) != 1:
            raise ValueError(f"SBX's DQN has two hidden layers of one width, not {policy['net_arch']}")
        policy["optimizer_class"] = adam_clipped
        policy["optimizer_kwargs"]["max_grad_norm"] = kwargs.pop("max_grad_norm")
        return DQN("MlpPolicy", SETTINGS[algo]["env"], **kwargs)
    # SBX's SAC updates its target networks after every gradient step: SB3's target_update_interval=1
    if kwargs.pop("target_update_interval") != 1:
        raise ValueError("SBX's SAC updates its targets at every gradient step")
    return SAC("MlpPolicy", SETTINGS[algo]["env"], **kwargs)


def child(algo: str, seed: int, frames: int) -> dict[str, Any]:
    """Train SBX's ``algo`` (in SBX's venv) through the evaluation loop of SB3's; return its row."""
    import statistics

    import torch

    torch.set_num_threads(1)  # SB3's replay buffer samples with torch
    import jax
    import sbx
    from offpolicy_speed_vs_sb3 import SETTINGS, Clock, learn_evaluated, run_row

    class CompileClock(Clock):
        """The benchmark's clock, which also counts JAX's compile time from its start, the evaluations left out."""

        def __init__(self, threshold: float) -> None:
            self.compiles = CompileTimer()
            super().__init__(threshold)

        def restart(self) -> None:
            super().restart()
            self.compiles.spans.clear()
            self.compiles.counting = True

        def evaluate(self, frames: int, run_episodes: Any) -> None:
            self.compiles.counting = False
            super().evaluate(frames, run_episodes)
            self.compiles.counting = True

    clock = CompileClock(float(SETTINGS[algo]["threshold"]))  # type: ignore[arg-type]
    model = sbx_model(algo, seed)
    train, calls = model.train, []

    def timed_train(**kwargs: Any) -> None:  # SB3's loop calls train(batch_size=..., gradient_steps=...)
        tic = time.perf_counter()
        train(**kwargs)  # synchronous: it reads its losses back with .item()
        calls.append(time.perf_counter() - tic)

    model.train = timed_train
    learn_evaluated(model, algo, frames, clock)
    seconds, cpu_seconds = clock.training_seconds(), clock.training_cpu_seconds()
    clock.compiles.counting = False
    later = statistics.median(calls[1:]) if len(calls) > 1 else float("nan")
    extra = {
        "compile_seconds": clock.compiles.seconds(),
        "first_update_call_seconds": calls[0] if calls else float("nan"),
        "later_update_call_seconds": later,
        "versions": f"sbx {sbx.__version__}, jax {jax.__version__} ({jax.default_backend()})",
    }
    return run_row("SBX", algo, seed, model.num_timesteps, seconds, clock, cpu_seconds=cpu_seconds, **extra)


def main(argv: list[str]) -> int:
    """``ALGO SEED FRAMES OUT``: train and write the row to OUT."""
    algo, seed, frames, out = argv
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # offpolicy_speed_vs_sb3
    row = child(algo, int(seed), int(frames))
    Path(out).write_text(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
