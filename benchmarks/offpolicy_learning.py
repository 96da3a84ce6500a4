"""Learning benchmark of the off-policy algorithms: DQN on CartPole-v1, SAC, TD3 and DDPG on Pendulum-v1.

Each case trains several seeds from the algorithm's embedded defaults (``rlctl config show dqn``,
``rlctl config show sac``, ...: nothing is overridden but the seed and the frame budget) and
evaluates the final policy deterministically (greedy for DQN, the tanh of the mean for SAC, the
actor's action without noise for TD3 and DDPG) on 10 episodes of a fresh env. A seed is solved
when that evaluation reaches the threshold (the issue's criterion); the table also shows the mean
return of the last 20 training episodes and the first frame count at which that mean reached the
threshold. The loop, the table and the summary are pg_learning.py's.

    python benchmarks/offpolicy_learning.py                        # every case, 5 seeds each
    python benchmarks/offpolicy_learning.py --case dqn:CartPole-v1 --seeds 0 1 2
    python benchmarks/offpolicy_learning.py --case sac:Pendulum-v1 --workers 1
    python benchmarks/offpolicy_learning.py --case td3:Pendulum-v1 --case ddpg:Pendulum-v1

It prints a markdown table and a summary (seeds solved against the seeds required); the exit
status is 0 when every case passes.
"""

from __future__ import annotations

import sys

from pg_learning import Case
from pg_learning import main as run_cases

CASES = [
    Case("dqn", "CartPole-v1", 100_000, 475.0, 4, eval_only=True),
    Case("sac", "Pendulum-v1", 20_000, -200.0, 4, eval_only=True),
    Case("td3", "Pendulum-v1", 20_000, -200.0, 4, eval_only=True),
    Case("ddpg", "Pendulum-v1", 20_000, -200.0, 4, eval_only=True),
]


def main(argv: list[str] | None = None) -> int:
    return run_cases(argv, CASES, __doc__)


if __name__ == "__main__":
    sys.exit(main())
