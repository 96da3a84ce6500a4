"""The keys through which replay buffers and off-policy losses talk (no torch import here)."""

from __future__ import annotations

#: rows of the buffer a sample came from (written by :meth:`ReplayBuffer.sample`)
INDEX_KEY = "index"
#: importance weights of a prioritized sample (TorchRL's name)
WEIGHT_KEY = "_weight"
#: where a loss writes each item's new priority (its absolute TD error), read at ``post_loss``
PRIORITY_KEY = "td_error"
#: steps between ``observation`` and ``("next", "observation")`` of an n-step transition (TorchRL's name)
STEPS_KEY = "steps_to_next_obs"
#: the batch keys of a transition, which every off-policy loss reads (``next`` holds the next observation, reward and ends)
TRANSITION_KEYS = ("observation", "action", "next")
#: the keys of ``next`` a transition needs: the n-step sums and the losses' targets read them
NEXT_KEYS = ("observation", "reward", "done", "terminated")
