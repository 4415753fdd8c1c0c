#include "modes.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <optional>

#include "conveyor/batch.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/progress_watch.h"
#include "conveyor/random.h"
#include "conveyor/read_file.h"
#include "conveyor/service/client.h"
#include "service_client.h"
#include "training.h"

namespace feed_vs_prefetch {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Element `index` of the endless stream every mode reads: the same file, label and seed everywhere. A
// failure names the file, the stage and the reason, as the pipeline's PipelineError does in prefetch mode.
void prepare_sample(const Setup& setup, std::uint64_t index, conveyor::Sample& sample,
                    conveyor::ImageView slot) {
  const std::size_t n = setup.paths.size();
  sample.recycle();
  sample.index = index % n;
  sample.epoch = index / n;
  sample.seed = conveyor::sample_seed(setup.options.seed, sample.epoch, sample.index);
  sample.path = setup.paths[sample.index];
  sample.label = setup.labels[sample.index];
  std::string stage = "read";
  try {
    // The pipeline's own read (one open, fstat and read, the same size limit): the naive modes differ
    // from prefetch in their scheduling only, not in how a file is read.
    conveyor::read_file(sample.path.c_str(), sample.encoded, conveyor::PipelineOptions{}.max_file_bytes);
    sample.bind_slot(slot);
    for (std::size_t i = 0; i < setup.ops.size(); ++i) {
      stage = setup.ops[i].name;
      sample.op_position = static_cast<std::uint32_t>(i);  // as the pipeline numbers its maps: same draws
      setup.ops[i].apply(sample);
    }
    stage = "batch";
    if (!sample.in_slot()) {
      const conveyor::ConstImageView image = sample.image();
      if (image.shape() != slot.shape()) throw conveyor::Error("sample of unexpected shape");
      for (int y = 0; y < image.height; ++y)
        std::memcpy(slot.row(y), image.row(y), static_cast<std::size_t>(image.width) * image.channels);
    }
  } catch (const std::exception& error) {
    throw conveyor::PipelineError(sample.path, stage, error.what());
  }
}

// One step as the training thread saw it; the compute share comes from the trainer's own clocks.
struct StepRecord {
  double wall_ms, data_ms, copy_ms;
};

class Recorder {
 public:
  Recorder(const Setup& setup, std::string mode) : setup_(setup) { result_.mode = std::move(mode); }

  void add(const StepRecord& record, bool timed) {
    if (timed)
      steps_.push_back(record);
    else
      result_.warmup_waits_ms.push_back(record.data_ms);
  }

  // step_times_ms: the trainer's own per-step compute times (CUDA events on a GPU), the last ones timed.
  // wall_ms: the timed steps'; from_first_batch_ms: from the first batch's arrival to the end of the last
  // step. Images are this process's: a data-parallel job's rate is the sum of its ranks'.
  ModeResult finish(double wall_ms, double from_first_batch_ms, double compute_busy_ms, double data_ms_total,
                    std::vector<double> step_times_ms) {
    auto quantile = [](std::vector<double> v, double q) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
    };
    std::vector<double> wall, data, copy;
    for (const auto& s : steps_) {
      wall.push_back(s.wall_ms);
      data.push_back(s.data_ms);
      copy.push_back(s.copy_ms);
    }
    if (step_times_ms.size() > steps_.size())
      step_times_ms.erase(step_times_ms.begin(),
                          step_times_ms.end() - static_cast<std::ptrdiff_t>(steps_.size()));
    const double batch_images = static_cast<double>(setup_.options.batch);
    result_.images_per_s_after_warmup_steps =
        wall_ms > 0 ? 1000.0 * static_cast<double>(steps_.size()) * batch_images / wall_ms : 0;
    const int all_steps = setup_.options.warmup + setup_.options.steps;
    result_.images_per_s =
        from_first_batch_ms > 0 ? 1000.0 * all_steps * batch_images / from_first_batch_ms : 0;
    result_.step_ms_median = quantile(wall, 0.5);
    result_.step_ms_p95 = quantile(wall, 0.95);
    result_.data_wait_ms = quantile(data, 0.5);
    result_.copy_ms = quantile(copy, 0.5);
    result_.compute_ms = quantile(step_times_ms, 0.5);
    result_.data_wait_fraction = wall_ms > 0 ? data_ms_total / wall_ms : 0;
    result_.idle_fraction = wall_ms > 0 ? std::clamp(1.0 - compute_busy_ms / wall_ms, 0.0, 1.0) : 0;
    return result_;
  }

  ModeResult& result() { return result_; }

 private:
  const Setup& setup_;
  ModeResult result_;
  std::vector<StepRecord> steps_;
};

// feed and parallel: make the batch on the training thread (one image after another, or with a
// parallel_for on the arena), copy it synchronously from pageable memory, run the step, wait for it.
ModeResult run_synchronous(const std::string& mode, const Setup& setup,
                           const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  Recorder recorder(setup, mode);
  conveyor::train::Trainer trainer(setup.trainer);
  auto t0 = Clock::now();
  trainer.warmup();
  recorder.result().warmup_s = ms_between(t0, Clock::now()) / 1000;

  conveyor::DeviceFeeder feeder(setup.placement, {.depth = 1});
  conveyor::PageableBatchBuffer buffer(static_cast<std::size_t>(setup.options.batch), setup.shape);
  const bool parallel = mode == "parallel";
  tbb::task_arena arena(setup.options.threads);
  std::vector<conveyor::Sample> samples(parallel ? static_cast<std::size_t>(setup.options.batch) : 1);
  const int track = trace ? trace->track("training thread") : -1;

  const auto mode_start = Clock::now();
  Clock::time_point timed_start{}, first_batch_at{};
  double busy_at_timed_start = 0, data_total = 0;
  for (int step = 0; step < setup.options.warmup + setup.options.steps; ++step) {
    const bool timed = step >= setup.options.warmup;
    if (step == setup.options.warmup) {
      timed_start = Clock::now();
      busy_at_timed_start = trainer.gpu_busy_ms();
    }
    const std::uint64_t first =
        static_cast<std::uint64_t>(step) * static_cast<std::uint64_t>(setup.options.batch);
    const auto a = Clock::now();
    if (parallel) {
      arena.execute([&] {
        tbb::parallel_for(0, setup.options.batch, [&](int i) {
          prepare_sample(setup, first + static_cast<std::uint64_t>(i), samples[static_cast<std::size_t>(i)],
                         buffer.slot(static_cast<std::size_t>(i)));
          buffer.labels()[static_cast<std::size_t>(i)] = samples[static_cast<std::size_t>(i)].label;
        });
      });
    } else {
      for (int i = 0; i < setup.options.batch; ++i) {
        prepare_sample(setup, first + static_cast<std::uint64_t>(i), samples[0],
                       buffer.slot(static_cast<std::size_t>(i)));
        buffer.labels()[static_cast<std::size_t>(i)] = samples[0].label;
      }
    }
    const auto b = Clock::now();
    conveyor::DeviceBatch staged = feeder.stage(
        buffer.batch(static_cast<std::size_t>(setup.options.batch), static_cast<std::uint64_t>(step)));
    feeder.synchronize();
    const auto c = Clock::now();
    trainer.step(staged);
    trainer.synchronize();
    const auto d = Clock::now();
    if (step == 0) {
      first_batch_at = b;
      recorder.result().first_batch_s = ms_between(mode_start, b) / 1000;
      recorder.result().first_step_s = ms_between(a, d) / 1000;
    }
    if (trace) {
      trace->complete(track, parallel ? "make batch (parallel)" : "make batch (one by one)", a, b);
      trace->complete(track, "copy (pageable, sync)", b, c);
      trace->complete(track, "step + wait", c, d);
    }
    if (timed) data_total += ms_between(a, b);
    recorder.add({ms_between(a, d), ms_between(a, b), ms_between(b, c)}, timed);
    if (setup.on_step) setup.on_step();
  }
  const auto end = Clock::now();
  recorder.result().loss_last = trainer.last_step().loss;
  trainer.synchronize();
  return recorder.finish(ms_between(timed_start, end), ms_between(first_batch_at, end),
                         trainer.gpu_busy_ms() - busy_at_timed_start, data_total, trainer.step_times_ms());
}

// The feeder: on a GPU, the per-pixel ops run there, fused with the normalize that makes the model's input
// (place_pixel_ops), and part of the decoding too (the hybrid split); off with --device-augment 0 and
// --gpu-decode 0. Returns the maps the pipeline keeps.
std::vector<conveyor::SampleOp> place_work(const Setup& setup, const conveyor::train::Trainer& trainer,
                                           conveyor::FeederOptions& feeder) {
  feeder.depth = 3;
  feeder.kernel_blocks_per_image = setup.options.kernel_blocks;
  feeder.host.cpus_near_gpu = setup.cpus_near_gpu;
  feeder.host.memory_near_gpu = setup.options.memory_near_gpu;
  feeder.set_up_behind = setup.options.set_up_behind;
  feeder.host_blocks_ahead = setup.options.host_blocks_ahead;
  if (!setup.placement.gpu) return setup.ops;  // the CPU reference normalizes on all cores itself
  if (setup.options.device_augment) feeder.normalize = trainer.input_normalization();
  std::vector<conveyor::SampleOp> maps = conveyor::place_pixel_ops(setup.ops, setup.placement, feeder);
  // From the service the workers' batches arrive decoded: nvJPEG takes its share of the splits this process
  // makes itself (--service-local-threads), and of nothing else.
  if (setup.options.gpu_decode &&
      (setup.options.service.empty() || setup.options.service_local_threads > 0)) {
    feeder.decode.enabled = true;
    feeder.decode.share = setup.options.gpu_share;
    feeder.decode.hardware_pipelining = setup.options.hardware_pipelining;
    feeder.decode.hardware_pool = setup.options.hardware_pool;
    feeder.decode.remember_share = setup.options.remember_split;
    feeder.decode.memory_key = setup.memory_key;
    feeder.decode.start_at_once = setup.options.start_at_once;
    feeder.decode.open_before_second = setup.options.open_before_second;
    feeder.decode.decode_threads = setup.options.decode_threads;
    feeder.decode.gpu_hybrid = setup.options.gpu_hybrid;
    feeder.decode.adapt = setup.options.gpu_adapt;
    feeder.decode.copy_whole_batch = setup.options.copy_whole_batch;
  }
  return maps;
}

// One line on where prefetch's work ran, for the report.
std::string describe_feeder(const conveyor::FeederOptions& options, const conveyor::FeederStats& stats,
                            const conveyor::PipelineStats& pipeline) {
  std::string text = "pipeline " + std::to_string(pipeline.threads) + " threads; augmentation on the " +
                     (options.augment.empty() ? "CPU" : "GPU");
  if (options.decode.enabled) {
    const double images = static_cast<double>(pipeline.elements_out);
    text += "; decode: " + std::to_string(stats.gpu_decoded) + " GPU (" +
            std::to_string(images > 0 ? static_cast<int>(100 * stats.gpu_decoded / images) : 0) + " %), " +
            std::to_string(stats.cpu_fallbacks) + " CPU fallbacks, " + std::to_string(stats.declined) +
            " declined, share now " + std::to_string(stats.gpu_share) + " (" + stats.decoder + ")";
  }
  return text;
}

// This rank's batches from the data service: the chain of `maps` (the standard chain's decode and, unless the
// GPU runs them, flip and distort, at the positions the full chain gives them: the same draws), its share of
// the job's epochs (one consumer per rank), made by the workers and, with --service-local-threads, by this
// process's cores too (the pipeline's CPUs, --cpus).
conveyor::BatchedDataset service_batches(const Setup& setup, const std::vector<conveyor::SampleOp>& maps,
                                         const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  const conveyor::service::ChainSpec chain = example_support::standard_service_chain(
      setup.options.data, setup.shape.height, setup.options.seed, maps);
  conveyor::service::ServiceOptions options;
  options.batch_size = static_cast<std::size_t>(setup.options.batch);
  options.epochs = 0;  // as long as the steps take
  options.drop_remainder = true;
  options.ranks = setup.ranks;
  options.local_threads = setup.options.service_local_threads;
  options.local_gpu_first = setup.options.service_local_gpu_first;
  options.streams_per_worker = setup.options.service_streams;
  options.keep_received_memory = setup.options.service_keep_memory;
  options.shared_memory = setup.options.service_shared_memory;
  options.local_cpus = setup.pipeline_cpus;
  example_support::join_service_job(options, setup.options.service_job, setup.options.service_token,
                                    setup.options.service_tls);
  return conveyor::service::from_service(setup.options.service, chain, options)
      .with_options({.trace = trace})
      .prefetch(4);
}

// The pipeline: this rank's share of the one shuffled order (element q of each epoch goes to rank
// q % ranks, padded so that all get as many), decoded and augmented by `maps` into batches.
conveyor::BatchedDataset rank_batches(const Setup& setup, const std::vector<conveyor::SampleOp>& maps,
                                      const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  conveyor::PipelineOptions options;
  options.threads = setup.pipeline_threads;  // 0: the feeder chooses (leaves a core to a CPU step)
  options.worker_nice = setup.options.pipeline_nice;
  options.seed = setup.options.seed;
  options.deterministic = setup.options.pipeline_deterministic;
  options.trace = trace;
  options.cpus = setup.pipeline_cpus;
  conveyor::Dataset samples = conveyor::Dataset::files(setup.paths, setup.labels).repeat();
  if (setup.data_parallel()) samples = samples.shard(setup.ranks, conveyor::ShardRemainder::pad);
  for (const auto& op : maps) samples = samples.map(op);
  return samples.with_options(conveyor::PipelineOptionChanges::all(options))
      .batch(static_cast<std::size_t>(setup.options.batch), setup.shape, true)
      .prefetch(4);
}

// prefetch: the Dataset pipeline makes batches into pinned buffers ahead of the step; the feeder copies
// them asynchronously (and, on a GPU, decodes its share and augments there); the step is queued without
// waiting for it. Data-parallel: the same on every rank, each on its share of the data.
ModeResult run_prefetch(const Setup& setup, const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  Recorder recorder(setup, "prefetch");
  // Every thread of the run (this one, the feeder's) says what it waits for; when no step ends for
  // stall_seconds, one report on stderr names them all: a hang shows its cycle of waits.
  std::shared_ptr<conveyor::ProgressWatch> watch;
  if (setup.options.stall_seconds > 0)
    watch = std::make_shared<conveyor::ProgressWatch>(conveyor::ProgressWatch::Options{
        .limit = std::chrono::milliseconds(static_cast<long long>(setup.options.stall_seconds * 1000))});
  const conveyor::ProgressWatch::Member me(watch, "training loop (main thread)");
  Training training(setup);
  auto t0 = Clock::now();
  training.warmup();
  recorder.result().warmup_s = ms_between(t0, Clock::now()) / 1000;
  if (watch) watch->progress();  // warm-up done: the stall clock counts from here
  if (setup.data_parallel()) std::printf("%s\n", training.placement().c_str());

  conveyor::FeederOptions feeder_options;
  const std::vector<conveyor::SampleOp> maps = place_work(setup, training.trainer(), feeder_options);
  feeder_options.progress_watch = watch;
  const conveyor::BatchedDataset dataset =
      setup.options.service.empty() ? rank_batches(setup, maps, trace) : service_batches(setup, maps, trace);
  conveyor::DeviceFeeder feeder(setup.placement, feeder_options);
  if (setup.options.feeder_warmup) {
    const auto start = Clock::now();
    feeder.warmup(dataset);
    recorder.result().feeder_warmup_s = ms_between(start, Clock::now()) / 1000;
    if (watch) watch->progress();
  }
  const int track = trace ? trace->track("training thread") : -1;
  const auto mode_start = Clock::now();
  conveyor::DeviceBatchIterator iterator = feeder.feed(dataset);
  Clock::time_point timed_start{}, first_batch_at{};
  double busy_at_timed_start = 0, copy_s_at_timed_start = 0, data_total = 0;
  auto previous = Clock::now();
  std::optional<conveyor::DeviceBatch> staged;
  for (int step = 0; step < setup.options.warmup + setup.options.steps; ++step) {
    const bool timed = step >= setup.options.warmup;
    if (step == setup.options.warmup) {
      training.synchronize();
      timed_start = previous = Clock::now();
      busy_at_timed_start = training.trainer().gpu_busy_ms();
      copy_s_at_timed_start = feeder.stats().copy_seconds;
    }
    const auto a = Clock::now();
    // --resident: the timed steps train on the batch already on the GPU (the step's own rate, no input).
    if (!(setup.options.resident && timed && staged)) {
      staged.reset();  // the last step's batch released: its slot is reused once its stream passed
      const conveyor::ProgressWatch::Doing doing("waiting for the staged batch");
      staged = iterator.next();  // its copy (and device work) queued
      if (!staged) throw conveyor::Error("the pipeline ended early");
    }
    const auto b = Clock::now();
    {
      const conveyor::ProgressWatch::Doing doing("queueing step", step);
      training.step(*staged);
    }
    if (watch) watch->progress();
    const auto c = Clock::now();
    if (step == 0) {
      training.synchronize();
      first_batch_at = b;
      recorder.result().first_batch_s = ms_between(mode_start, b) / 1000;
      recorder.result().first_step_s = ms_between(a, Clock::now()) / 1000;
    }
    if (setup.options.record_loss) recorder.result().losses.push_back(training.last_step().loss);
    if (trace) {
      trace->complete(track, "wait for batch (staged)", a, b);
      trace->complete(track, "queue step", b, c);
    }
    const auto now = Clock::now();
    // In an overlapped loop a step's cost is the time between two step launches; its copy and compute
    // shares come from the device's own clocks (events), read after the loop.
    if (timed) data_total += ms_between(a, b);
    recorder.add({ms_between(previous, now), ms_between(a, b), 0}, timed);
    previous = now;
    if (setup.on_step) setup.on_step();
  }
  staged.reset();
  training.synchronize();
  const auto end = Clock::now();
  const double wall = ms_between(timed_start, end);
  recorder.result().loss_last = training.last_step().loss;
  feeder.synchronize();
  ModeResult result = recorder.finish(wall, ms_between(first_batch_at, end),
                                      training.trainer().gpu_busy_ms() - busy_at_timed_start, data_total,
                                      training.trainer().step_times_ms());
  // Copies overlap the step: their cost is the copy stream's own time (events), per step on average.
  result.copy_ms = 1000 * (feeder.stats().copy_seconds - copy_s_at_timed_start) / setup.options.steps;
  // Where the work ran: the pipeline and the feeder.
  const conveyor::FeederStats stats = feeder.stats();
  const conveyor::PipelineStats pipeline = iterator.stats();
  result.pipeline_threads = pipeline.threads;
  result.source_parts = pipeline.source_parts;
  result.feeder = describe_feeder(feeder_options, stats, pipeline);
  result.feeder_stats = stats;
  result.split_memory = stats.split_memory;
  if (watch) result.stall_reports = watch->stalls();
  result.gpu_decoded_fraction = pipeline.elements_out > 0 ? static_cast<double>(stats.gpu_decoded) /
                                                                static_cast<double>(pipeline.elements_out)
                                                          : 0;
  return result;
}

}  // namespace

ModeResult run_mode(const std::string& mode, const Setup& setup,
                    const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  if (mode == "prefetch") return run_prefetch(setup, trace);
  return run_synchronous(mode, setup, trace);
}

}  // namespace feed_vs_prefetch
