"""stats() and the trace recorder from Python."""
import json
import time

from support import conveyor, train_chain


def test_stats_count_stages_batches_and_the_pool(image_folder):
    it = iter(train_chain(image_folder, size=16, threads=2).batch(8))
    assert sum(len(b) for b in it) == 24
    stats = it.stats()
    assert (stats.threads, stats.elements_in, stats.elements_out, stats.batches) == (2, 24, 24, 3)
    names = [stage.name for stage in stats.stages]
    assert names[:2] == ["source", "read"]
    assert "decode_random_resized_crop" in names and "flip_horizontal" in names and "distort" in names
    decode = stats.stages[names.index("decode_random_resized_crop")]
    assert decode.count == 24 and decode.busy_ns > 0 and decode.failures == 0
    assert stats.queue.capacity == 2 and stats.pool_buffers <= stats.pool_capacity
    assert "decode_random_resized_crop" in str(stats)


def test_the_trace_records_the_pipeline_and_the_loop_in_one_file(image_folder, tmp_path):
    recorder = conveyor.TraceRecorder()
    ds = train_chain(image_folder, size=16).with_options(threads=2, trace=recorder).batch(8)
    loop = recorder.track("training loop")
    for batch in ds:
        start = time.monotonic()
        len(batch)
        recorder.complete(loop, "step", start, time.monotonic())
    recorder.counter("loss", time.monotonic(), 0.5)
    path = tmp_path / "trace.json"
    recorder.write_json(path)
    events = json.loads(path.read_text())["traceEvents"]
    names = {e.get("name") for e in events}
    assert {"step", "decode_random_resized_crop", "loss"} <= names
    steps = [e for e in events if e.get("name") == "step"]
    assert len(steps) == 3 and all(e["dur"] >= 0 for e in steps)
    assert recorder.events >= 3 + 24 and recorder.dropped == 0


def test_trace_times_share_python_monotonic_clock():
    before = time.monotonic()
    now = conveyor.TraceRecorder.now()
    after = time.monotonic()
    assert before <= now <= after
