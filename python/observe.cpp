// What a running pipeline and a feeder report (conveyor/stats.h, FeederStats), and the Chrome-trace
// recorder (conveyor/trace.h) whose times, in Python, are seconds on time.monotonic()'s clock (the clock of
// C++'s steady_clock on Linux), so a training loop can add its own events to the pipeline's trace.
#include <chrono>
#include <memory>
#include <string>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/stats.h"
#include "conveyor/trace.h"
#include "python/bindings.h"

namespace conveyor::python {
namespace {

TraceRecorder::TimePoint time_point(double seconds) {
  return TraceRecorder::TimePoint(
      std::chrono::duration_cast<TraceRecorder::Clock::duration>(std::chrono::duration<double>(seconds)));
}

double seconds(TraceRecorder::TimePoint at) {
  return std::chrono::duration<double>(at.time_since_epoch()).count();
}

void bind_stats(py::module_& module) {
  py::class_<StageStats>(module, "StageStats", "One stage of the pipeline: elements, busy time, failures.")
      .def_readonly("name", &StageStats::name)
      .def_readonly("count", &StageStats::count)
      .def_readonly("busy_ns", &StageStats::busy_ns, "Time spent in the stage, summed over threads.")
      .def_readonly("failures", &StageStats::failures)
      .def("__repr__", [](const StageStats& s) {
        return "conveyor.StageStats('" + s.name + "', count=" + std::to_string(s.count) + ")";
      });
  py::class_<QueueStats>(module, "QueueStats", "The queue of ready batches (or samples).")
      .def_readonly("current", &QueueStats::current)
      .def_readonly("max", &QueueStats::max)
      .def_readonly("mean", &QueueStats::mean,
                    "Average number ready when the consumer asked for the next one.")
      .def_readonly("capacity", &QueueStats::capacity, "The prefetch depth.");
  py::class_<SkippedSample>(module, "SkippedSample", "One element on_error=\"skip\" dropped, and why.")
      .def_readonly("path", &SkippedSample::path)
      .def_readonly("stage", &SkippedSample::stage)
      .def_readonly("reason", &SkippedSample::reason)
      .def("__repr__", [](const SkippedSample& s) {
        return "conveyor.SkippedSample('" + s.path + "', stage='" + s.stage + "')";
      });
  py::class_<RemoteReadStats>(module, "RemoteReadStats",
                              "Remote tar shards (http(s)://, s3://) read by the data set, its cache's part.")
      .def_readonly("shards_opened", &RemoteReadStats::shards_opened)
      .def_readonly("cache_hits", &RemoteReadStats::cache_hits)
      .def_readonly("cache_misses", &RemoteReadStats::cache_misses)
      .def_readonly("uncached", &RemoteReadStats::uncached)
      .def_readonly("bytes_fetched", &RemoteReadStats::bytes_fetched)
      .def_readonly("bytes_from_cache", &RemoteReadStats::bytes_from_cache)
      .def_readonly("evictions", &RemoteReadStats::evictions)
      .def_readonly("retries", &RemoteReadStats::retries);
  py::class_<PipelineStats>(module, "PipelineStats",
                            "What a running pipeline has done so far (a snapshot; str() formats it).")
      .def_readonly("threads", &PipelineStats::threads)
      .def_readonly("max_in_flight", &PipelineStats::max_in_flight)
      .def_readonly("elements_in", &PipelineStats::elements_in)
      .def_readonly("elements_out", &PipelineStats::elements_out)
      .def_readonly("batches", &PipelineStats::batches)
      .def_readonly("filtered", &PipelineStats::filtered)
      .def_readonly("deferred", &PipelineStats::deferred,
                    "Elements whose pixels the op left to the feeder's GPU decoder.")
      .def_readonly("skipped", &PipelineStats::skipped)
      .def_readonly("skip_reasons", &PipelineStats::skip_reasons,
                    "\"stage: kind\" -> count, e.g. \"read: io\".")
      .def_readonly("skipped_samples", &PipelineStats::skipped_samples, "The first 100 skipped.")
      .def_readonly("stages", &PipelineStats::stages, "In pipeline order.")
      .def_readonly("queue", &PipelineStats::queue)
      .def_readonly("consumer_waits", &PipelineStats::consumer_waits)
      .def_readonly("consumer_wait_ns", &PipelineStats::consumer_wait_ns)
      .def_readonly("pool_buffers", &PipelineStats::pool_buffers, "Batch buffers allocated so far.")
      .def_readonly("pool_capacity", &PipelineStats::pool_capacity, "The most the pool may allocate.")
      .def_readonly("pinned", &PipelineStats::pinned)
      .def_readonly("remote", &PipelineStats::remote,
                    "Remote shards: the cache's hits and misses, bytes fetched.")
      .def("__str__", &format_stats);
  py::class_<FeederStats>(module, "FeederStats", "What a DeviceFeeder has done so far.")
      .def_readonly("batches", &FeederStats::batches)
      .def_readonly("copies", &FeederStats::copies)
      .def_readonly("bytes", &FeederStats::bytes)
      .def_readonly("copy_seconds", &FeederStats::copy_seconds)
      .def_readonly("pageable", &FeederStats::pageable, "Batches that were not in page-locked memory.")
      .def_readonly("allocations", &FeederStats::allocations)
      .def_readonly("host_waits", &FeederStats::host_waits)
      .def_readonly("held", &FeederStats::held, "DeviceBatch handles (or views of them) alive now.")
      .def_readonly("decoder", &FeederStats::decoder, "What decodes on the GPU, or why nothing does.")
      .def_readonly("gpu_decoded", &FeederStats::gpu_decoded, "Images nvJPEG decoded into the batches.")
      .def_readonly("cpu_fallbacks", &FeederStats::cpu_fallbacks,
                    "Images left to the GPU that nvJPEG refused, decoded on the CPU by the feeder.")
      .def_readonly("decode_failures", &FeederStats::decode_failures,
                    "Images left to the GPU that neither decoder could decode (slot zeroed under skip).")
      .def_readonly("declined", &FeederStats::declined,
                    "Images the op was asked to leave to the GPU but decoded itself (e.g. CMYK).")
      .def_readonly("fallback_reasons", &FeederStats::fallback_reasons, "The counts above, by reason.")
      .def_readonly("gpu_share", &FeederStats::gpu_share, "The share of images left to the GPU now.")
      .def_readonly("decode_host_seconds", &FeederStats::decode_host_seconds)
      .def_readonly("decode_wait_seconds", &FeederStats::decode_wait_seconds)
      .def_readonly("decode_check_seconds", &FeederStats::decode_check_seconds)
      .def_readonly("decode_submit_seconds", &FeederStats::decode_submit_seconds)
      .def_readonly("decode_resize_seconds", &FeederStats::decode_resize_seconds)
      .def_readonly("decode_gpu_seconds", &FeederStats::decode_gpu_seconds)
      .def_readonly(
          "startup", &FeederStats::startup,
          "How the GPU decoder came ready: before feed(), made by feed(), or at once behind the CPU.")
      .def_readonly("decoder_ready_seconds", &FeederStats::decoder_ready_seconds,
                    "From feed() to the split's opening to the GPU (0: open from the first sample).")
      .def_readonly("second_decoder_seconds", &FeederStats::second_decoder_seconds,
                    "From feed() to the second GPU decoder's joining (0: made with the first).")
      .def_readonly("first_stage_seconds", &FeederStats::first_stage_seconds)
      .def_readonly("gpu_decode_paths", &FeederStats::gpu_decode_paths, "GPU-decoded images by nvJPEG path.")
      .def_readonly("bytes_not_copied", &FeederStats::bytes_not_copied)
      .def_readonly("pipeline_cpus", &FeederStats::pipeline_cpus,
                    "Where the last feed ran its pipeline (empty: wherever the process may run).")
      .def_readonly("pipeline_cpus_reason", &FeederStats::pipeline_cpus_reason)
      .def_readonly("host_memory", &FeederStats::host_memory, "Where the page-locked batches live, and why.");
}

void bind_trace(py::module_& module) {
  py::class_<TraceRecorder, std::shared_ptr<TraceRecorder>>(
      module, "TraceRecorder",
      "A Chrome-trace recorder (chrome://tracing, https://ui.perfetto.dev). Give it to a pipeline "
      "(with_options(trace=recorder)) to record every stage of every element; add your own tracks and "
      "events with times in seconds of time.monotonic().")
      .def(py::init<std::size_t>(), py::arg("max_events_per_track") = std::size_t{1} << 20)
      .def("track", &TraceRecorder::track, py::arg("name"), "A new track (a row in the viewer); its number.")
      .def(
          "complete",
          [](TraceRecorder& self, int track, const std::string& name, double start, double end) {
            self.complete(track, name, time_point(start), time_point(end));
          },
          py::arg("track"), py::arg("name"), py::arg("start"), py::arg("end"),
          "An event on `track` from `start` to `end` (time.monotonic() seconds). One thread at a time per "
          "track.")
      .def(
          "instant",
          [](TraceRecorder& self, int track, const std::string& name, double at) {
            self.instant(track, name, time_point(at));
          },
          py::arg("track"), py::arg("name"), py::arg("at"))
      .def(
          "counter",
          [](TraceRecorder& self, const std::string& name, double at, double value) {
            self.counter(name, time_point(at), value);
          },
          py::arg("name"), py::arg("at"), py::arg("value"))
      .def_property_readonly("events", &TraceRecorder::events)
      .def_property_readonly("dropped", &TraceRecorder::dropped)
      .def("json", &TraceRecorder::json, "The trace as Chrome's JSON object format.")
      .def(
          "write_json",
          [](const TraceRecorder& self, const std::filesystem::path& path) {
            py::gil_scoped_release released;
            self.write_json(path);
          },
          py::arg("path"))
      .def_static(
          "now", [] { return seconds(TraceRecorder::now()); }, "time.monotonic(), from C++.");
}

}  // namespace

void bind_observe(py::module_& module) {
  bind_stats(module);
  bind_trace(module);
}

}  // namespace conveyor::python
