"""`zlh calibrate`: this machine's noise floor and a planted-change self-test (the plant
itself, a known device delay added on the bench side, is run/plant.py).

    floor.py   statistics of A/A and planted rounds: noise floor, detectable change, detection
    noise.py   calibration.json read back; `zlh ab --noise-floor` labels deltas within it
    run.py     A/A (or A vs planted B) through the `zlh ab` machinery, calibration.json, table
"""

__all__: list[str] = []      # its modules are imported by name; the package adds nothing
