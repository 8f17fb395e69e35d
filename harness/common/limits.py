"""Upper bounds on counts the user gives. Each is far beyond any run that ends in a working
day; a larger value is a typo (an extra zero or two), refused at once instead of a command
that never ends."""
from __future__ import annotations

MAX_ROUNDS = 1000           # zlh ab / calibrate / campaign rounds, compare_callables rounds
MAX_REPEAT = 1000           # --repeat: independent measurements of each case
MAX_PLACEMENTS = 256        # --placements: placements of the inputs per case
MAX_RETRY_THROTTLED = 100   # --retry-throttled: re-measurements of a throttled case
