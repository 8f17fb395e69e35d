"""standby.WarmPool keeps `depth` spares launched ahead, hands out the oldest first and stops
the ones left when it closes (the workers here are stand-ins: no process is started)."""
import threading

from harness.corpus import standby
from harness.corpus.supervisor import Lane


class StandIn:
    launched: list["StandIn"] = []

    def __init__(self, lane, log, warm=None):
        self.warm, self.ready, self.stopped = warm, False, False
        self.pid, self.launched_at, self.ready_at, self.import_s = 0, 0.0, 0.0, 0.0
        self.go = threading.Event()

    def launch(self):
        StandIn.launched.append(self)

    def await_ready(self):
        self.go.wait(30)
        self.ready = True

    def stop(self):
        self.stopped = True


def test_a_deep_pool_keeps_its_spares_launched_and_hands_out_the_oldest(tmp_path, monkeypatch):
    monkeypatch.setattr(standby, "Worker", StandIn)
    StandIn.launched = []
    pool = standby.WarmPool(Lane(), tmp_path / "worker.log", depth=3)
    pool.warm = {"op": "add"}
    pool.prime()
    first, second, third = StandIn.launched
    assert pool.starts == 3 and list(pool.spares) == [first, second, third]
    assert first.warm == {"op": "add"} and first.warm is not pool.warm    # each its own copy
    assert not pool.spare_ready.is_set()
    first.go.set()
    assert pool.spare_ready.wait(10)              # the one taken next said it is ready
    assert pool.take() is first                   # the oldest, then one more behind the others
    assert pool.starts == 4 and list(pool.spares) == [second, third, StandIn.launched[3]]
    assert not pool.spare_ready.is_set()          # the next one is still importing
    second.go.set()
    assert pool.spare_ready.wait(10)
    pool.close()
    assert all(w.stopped for w in StandIn.launched[1:]) and not first.stopped
    assert pool.spare is None and pool.take() not in StandIn.launched   # closed: no launch
    assert pool.starts == 4
