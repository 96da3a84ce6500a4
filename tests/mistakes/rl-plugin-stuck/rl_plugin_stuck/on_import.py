"""A module whose import never returns."""

import time

while True:
    time.sleep(0.05)
