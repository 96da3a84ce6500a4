"""Plugins that never return, as one waiting on a lock or a server that never answers: rl-core gives up on them."""

from __future__ import annotations

import time
from typing import Any

from rlcore import hookimpl


class registry:
    """A registry hook that never returns."""

    @staticmethod
    @hookimpl
    def rl_register_hooks() -> Any:
        while True:
            time.sleep(0.05)
