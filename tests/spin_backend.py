"""A backend that records the device spins it is asked for, its clock 1 GHz (for the plant's
tests)."""


class SpinBackend:
    name = "fake"

    def __init__(self):
        self.spun = []

    def has_spin(self):
        return True

    def spin(self, cycles):
        self.spun.append(cycles)

    def spin_cycles_per_ms(self, index):
        return 1_000_000.0          # 1 GHz
