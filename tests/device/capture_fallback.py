"""Device check: capture failures are sorted and fall back; the generator stays usable.

Times (1) a host-syncing callable, (2) an RNG op, (3) a plain op, through CaseTimer with the
graph timer, then checks torch.rand still works, and prints the classification of a few
known error texts.
"""
from __future__ import annotations

import torch

import backends
from harness.measure.case_timer import CaseTimer
from harness.measure.stopping import Budget, StoppingRule


def main():
    backend = backends.get_backend("cuda")
    backend.activate(0)
    timer = CaseTimer(backend, 0, "graph", StoppingRule(max_time_ms=200), Budget())
    x = torch.randn(1 << 20, device="cuda")
    cases = {
        "host_sync": lambda: x.sum().item(),
        "rng_dropout": lambda: torch.nn.functional.dropout(x, 0.5, training=True),
        "plain_mul": lambda: x * 2,
    }
    for name, fn in cases.items():
        try:
            timed = timer.measure(fn, name)
            print(f"{name}: timer={timed.measurement.timer} median={timed.measurement.median:.5f} ms "
                  f"markers={timed.markers}")
        except Exception as exc:  # noqa: BLE001
            print(f"{name}: raised {type(exc).__name__}: {exc}")
    before = torch.cuda.get_rng_state()
    torch.rand(4, device="cuda")
    print("generator usable after capture attempts: yes; state advanced:",
          not torch.equal(before, torch.cuda.get_rng_state()))
    for text in ["RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
                 "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
                 "RuntimeError: CUDA error: an illegal memory access was encountered",
                 "RuntimeError: Offset increment outside graph capture encountered unexpectedly."]:
        print(backend.classify_error(text), "<-", text.splitlines()[0])


if __name__ == "__main__":
    main()
