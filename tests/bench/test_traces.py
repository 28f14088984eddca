"""mlx_sgemm.bench.traces without PyTorch: a stand-in profiler that writes a
Chrome-format trace as torch.profiler's export_chrome_trace does."""

import json

from mlx_sgemm.bench import traces

EVENTS = [{"ph": "X", "cat": "kernel", "name": "k", "ts": 0, "dur": 1.0}]


class Profiler:
    def export_chrome_trace(self, path):
        with open(path, "w") as f:
            json.dump({"traceEvents": EVENTS, "deviceProperties": []}, f)


def test_events_from_a_kept_trace_and_from_a_passing_one(tmp_path):
    kept = tmp_path / "trace.json"
    assert traces.profiler_events(Profiler(), kept) == EVENTS and traces.trace_events(kept) == EVENTS
    assert traces.profiler_events(Profiler()) == EVENTS
