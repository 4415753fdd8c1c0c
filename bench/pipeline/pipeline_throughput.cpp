// pipeline_throughput: images per second of the full CPU input pipeline on a folder of JPEGs (or a list
// file, tar shards, shards over HTTP: see open_data),
//   image_folder -> shuffle -> decode_random_resized_crop(S) -> flip_horizontal(0.5)
//   -> distort(.4, .4, .4) -> batch(B) (pinned when a GPU is present) -> prefetch
// at one thread count or a sweep of them. The headline rate, images_per_s, is counted from the first
// batch: the images of every batch after the first over the time from the first batch's arrival to the
// last batch's; the time to the first batch is reported apart, as start-up (time_to_first_batch_s).
// bench/peers/ (timing_rules.py) applies the same rule to the peers. Written beside it, named: the rate
// after W batches (images_per_s_after_warmup_batches, W = warmup_batches = the thread count, at least 1,
// the headline rule before 2026-11-27: it flatters a pipeline that starts slowly, and a DataLoader whose
// W workers deliver their first W batches together), and over the whole run including start-up
// (images_per_s_overall). A checksum over every batch's bytes and labels, in order (BatchChecksum),
// shows that the result does not depend on the thread count; --checksum 0 leaves it out, so that the
// consumer does no work at all, as bench/pipeline/pipeline_throughput.py (the same run from Python) does.
// See --help for the options.
//
// --format segmentation|detection (issue 35) runs the same chain over samples with fields: a segmentation
// folder (--data ROOT with images/ and masks/: JPEG + PNG mask, the mask moved with the image) or COCO
// detection (--data instances.json, images in --images or images/ beside it: JPEG + boxes); the batches then
// also hold the masks or the padded boxes, and the checksum covers them too. The settings:
// segmentation --size 512 --batch 32, detection --size 640 --batch 32 (the peer:
// bench/peers/torch_fields.py).
//
// With --device gpu the run ends on the device instead (issue 20): a DeviceFeeder copies each batch to the
// GPU, decodes there the share of the images the hybrid split gives it (nvJPEG; --gpu-decode), runs flip
// and distort fused with the normalize that makes a model's input (--gpu-augment), and the images are
// ready on the GPU (bf16 NHWC by default, --precision). The same timing rule, the clock stopped once the
// GPU has finished the last batch; the checksum is computed on the GPU over every batch's pixels and
// images (device_checksum.h), so it shows the same run-to-run and thread-count independence in
// deterministic runs. The split (images decoded by the CPU and by the GPU, fallbacks by reason) is
// printed and written. Issue 36's levers, each switchable to measure it against its baseline:
// --feeder-warmup (DeviceFeeder::warmup before the pipeline starts: ring, page-locked batches, nvJPEG and its
// kernels; off by default since issue 41, whose start at once does the same behind the CPU workers),
// --remember-split (the split starts where the last such run settled), --hardware-pool (nvJPEG's hardware
// decoder keeps a pool instead of freeing in its calls), and --kernel-blocks N (the feeder's kernels on at
// most N blocks per image; 0, the default, one pass's worth). Issue 41's: --start-at-once (the CPU decodes
// everything until nvJPEG is ready on a thread of the feeder; 0: feed() makes it ready first),
// --open-before-second (0: both of nvJPEG's decoders before the split opens), --decode-threads 2 (the two
// decoders each submit half of every batch, the second on a thread of its own),
// --gpu-hybrid (0: only the hardware engines decode on the GPU, what they refuse goes to the CPU) and
// --copy-whole-batch (0: the deferred samples' slots are left out of the copy). The JSON's "device" says how
// the decoder came ready and when (startup, decoder_ready_s), the feeder's part of the first batch
// (first_stage_s), the GPU-decoded images by nvJPEG path, and feeder_construction_s: making the
// DeviceFeeder, which creates the process's CUDA context here (a training program has made it before) on a
// thread of the feeder's own, behind the first batch's CPU decoding (device_setup_s: how long that took;
// --set-up-behind 0: in the constructor, as before 2026-11-29). --context-first 1 makes the CUDA context
// before the clock starts, as a training program has it once its model is on the GPU: the first batch then
// measures the feeder's own set-up, not the context's.
//
//   pipeline_throughput --data DIR|LIST|SHARDS|URL|ROOT|JSON [--format classification|segmentation|detection]
//                       [--images DIR] [--threads N] [--batch 256] [--size 224] [--epochs 1]
//                       [--seed 0] [--on-error fail|skip] [--json FILE] [--trace FILE] [--sweep 1,2,4,8,16]
//                       [--limit N] [--prefetch 4] [--repeat 1] [--in-flight N] [--deterministic 1|0]
//                       [--checksum 1|0] [--shards N --shard I] [--state-out FILE] [--resume FILE ...]
//                       [--batch-log FILE] [--sample-log FILE] [--parallel-shards N] [--shard-read-ahead N]
//                       [--shard-random-access 0|1]
//
// --service grpc://HOST:PORT (issue 40) has the chain the other flags describe (--data, --format, --images,
// --size, --seed, the augmentation; --shards/--shard as ranks, --epochs, --batch, --deterministic) made by
// the data service whose dispatcher listens there, instead of by a pipeline here: the same samples, indices
// and pixels (conveyor/service/client.h). --service-local-threads N lets this process's own cores make splits
// too.
// --sample-log, --batch-log, --state-out and --resume work as they do locally; the stats end with what each
// worker (and the local cores) made, bytes on the wire per sample, and the time spent waiting.
//
// Resume (issue 15): --state-out writes the iterator's state after every batch (atomically); --resume
// starts from such a file (given once per shard of the run that wrote them, they are combined: the rest of
// the epoch is split over this run's --shards); --batch-log writes "epoch first_index checksum" per batch
// and --sample-log "epoch index checksum label" per sample (XXH3 of its pixels), each line flushed before
// the state is written, so that a run killed at any moment and resumed gives the same lines.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "conveyor/batch_checksum.h"
#include "conveyor/cuda/device_feeder.h"
#ifdef CONVEYOR_HAVE_CUDA
#include "bench/pipeline/device_checksum.h"
#include "conveyor/cuda/stream.h"
#endif
#include "bench/record_commit.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/iterator_state.h"
#include "conveyor/ops.h"
#include "conveyor/service/client.h"
#include "conveyor/shards.h"
#include "conveyor/stats.h"
#include "conveyor/trace.h"
#include "examples/support/feeder_options.h"
#include "examples/support/service_client.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::string data;
  std::string format = "classification";  // or segmentation, detection (issue 35)
  std::string images;                     // detection: the images folder (default: images/ beside --data)
  int threads = 0;
  std::size_t batch = 256;
  int size = 224;
  std::uint64_t epochs = 1;
  std::uint64_t seed = 0;
  conveyor::OnError on_error = conveyor::OnError::fail;
  std::string json;
  std::string trace;
  std::vector<int> sweep;
  std::uint64_t limit = 0;
  std::size_t prefetch = 4;
  int repeat = 1;
  std::size_t in_flight = 0;       // 0: the library's default
  std::size_t shuffle_buffer = 0;  // 0: the data's own shuffle (whole-epoch for files, 1,000 for shards)
  int worker_nice = -1;            // PipelineOptions::worker_nice; -1: the library's default
  bool deterministic = true;
  bool checksum = true;
  std::size_t shards = 1, shard = 0;
  // Tar shards (TarShardOptions): shards read at once and samples read ahead per shard; 0: the defaults.
  std::size_t parallel_shards = 0, shard_read_ahead = 0;
  bool shard_random_access = false;  // TarShardOptions::random_access: local shards read like loose files
  // Remote shards (http(s)://, s3://) kept on local disk (TarShardOptions::cache): the cap, 0: no cache.
  std::uint64_t shard_cache_bytes = 0;
  std::string shard_cache_dir;  // empty: conveyor's cache folder
  std::string state_out, batch_log, sample_log;
  std::vector<std::string> resume;
  // --device gpu: where the run ends and what runs there.
  std::string device = "none";  // none: batches in host memory (the CPU pipeline alone)
  bool gpu_decode = true;
  double gpu_share = 0.5;
  bool hardware_pipelining = false;
  bool gpu_augment = true;
  std::string precision = "bf16";
  // issue 36's levers, each switchable so that a run measures it against its baseline.
  bool feeder_warmup = false;  // DeviceFeeder::warmup before the pipeline starts (default on before issue 41)
  bool remember_split = true;  // DeviceDecode::remember_share
  bool hardware_pool = true;   // DeviceDecode::hardware_pool
  int kernel_blocks = 0;       // FeederOptions::kernel_blocks_per_image
  // issue 41's levers (DeviceDecode): the GPU decoder comes ready behind the CPU workers; GPU hybrid
  // decoding of what the engines refuse; the deferred slots copied with the rest.
  bool start_at_once = true;
  bool open_before_second = true;
  int decode_threads = 1;  // DeviceDecode::decode_threads
  bool gpu_hybrid = true;
  bool gpu_adapt = true;
  bool copy_whole_batch = true;
  bool set_up_behind = true;  // FeederOptions::set_up_behind
  std::size_t host_blocks_ahead = 0;  // FeederOptions::host_blocks_ahead
  bool context_first = false;  // the process's CUDA context made before the clock starts
  // --service: the data service's dispatcher, and how this trainer takes part (issue 40).
  std::string service, service_job, service_token, service_tls;
  int service_local_threads = 0;
  bool service_local_gpu_first = true;
  std::size_t service_streams = 2;
  bool service_keep_memory = true;
  bool service_shared_memory = true;
  std::size_t service_split = 0;
};

// The options of the service mode (see the file comment).
void add_service_options(CLI::App& app, Config& config) {
  app.add_option("--service", config.service,
                 "grpc://HOST:PORT: the data service's dispatcher makes the chain instead of this process");
  app.add_option("--service-split", config.service_split,
                 "with --service: batches per split (0: about 2,048 samples)")
      ->capture_default_str();
  example_support::add_service_client_options(app, config, "with --service: ");
}

// The options of the device mode (see the file comment).
void add_device_options(CLI::App& app, Config& config) {
  app.add_option("--device", config.device,
                 "none: the batches end in host memory; gpu or gpu:N: on that GPU, with the options below")
      ->capture_default_str();
  app.add_option("--gpu-augment", config.gpu_augment, "flip and distort on the GPU, fused with normalize")
      ->capture_default_str();
  app.add_option("--precision", config.precision, "the normalized images' element type (NHWC)")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  example_support::add_feeder_lever_options(app, config, "");
  app.add_option("--context-first", config.context_first,
                 "with --device gpu: make the process's CUDA context before the clock starts, as a training "
                 "program has it once its model is on the GPU (0: the feeder makes it, timed)")
      ->capture_default_str();
}

Config parse(int argc, char** argv) {
  Config config;
  CLI::App app(
      "pipeline_throughput: images per second of the full CPU input pipeline (image_folder, shuffle,\n"
      "decode_random_resized_crop, flip, distort, batch, prefetch) on a folder of JPEGs.");
  app.add_option("--data", config.data,
                 "ImageFolder root, list file, tar shards (index .json, pattern, URL) (required)");
  app.add_option("--threads", config.threads, "worker threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--batch", config.batch, "images per batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--size", config.size, "crop size in pixels")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--epochs", config.epochs, "passes over the data")->capture_default_str();
  app.add_option("--seed", config.seed, "pipeline seed (order and augmentation)")->capture_default_str();
  std::string on_error = "fail";
  app.add_option("--on-error", on_error, "a file that fails to decode: fail the run or skip it")
      ->capture_default_str()
      ->check(CLI::IsMember({"fail", "skip"}));
  app.add_option("--json", config.json, "write the results as JSON to FILE");
  app.add_option("--trace", config.trace, "write a Chrome trace of the (last) run to FILE");
  app.add_option("--sweep", config.sweep, "run at each of these thread counts, e.g. 1,2,4,8,16")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  app.add_option("--limit", config.limit, "use only the first N files (0: all)")->capture_default_str();
  app.add_option("--prefetch", config.prefetch, "batches made ahead")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--repeat", config.repeat, "runs per point; the median is reported")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--in-flight", config.in_flight, "elements in flight (0: the library's default)")
      ->capture_default_str();
  app.add_option(
         "--shuffle-buffer", config.shuffle_buffer,
         "shuffle through a buffer of N samples, files too (0: whole-epoch for files, 1,000 for shards)")
      ->capture_default_str();
  app.add_option("--worker-nice", config.worker_nice,
                 "nice value of the pipeline's threads (PipelineOptions::worker_nice; -1: its default)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 19));
  app.add_option("--deterministic", config.deterministic, "deliver in order (1) or as ready (0)")
      ->capture_default_str();
  app.add_option("--checksum", config.checksum, "checksum every batch (1) or leave the consumer idle (0)")
      ->capture_default_str();
  app.add_option("--shards", config.shards, "split the data into N shards (shard(N, I))")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  app.add_option("--shard", config.shard, "the shard this run reads")->capture_default_str();
  app.add_option("--parallel-shards", config.parallel_shards,
                 "tar shards: shards read at once (0: TarShardOptions' default)")
      ->capture_default_str();
  app.add_option("--shard-read-ahead", config.shard_read_ahead,
                 "tar shards: samples read ahead per shard being read (0: TarShardOptions' default)")
      ->capture_default_str();
  app.add_option("--shard-random-access", config.shard_random_access,
                 "local tar shards: locate the samples once and read each with one pread(), shuffled over "
                 "the whole epoch as files are (TarShardOptions::random_access)")
      ->capture_default_str();
  app.add_option("--shard-cache-bytes", config.shard_cache_bytes,
                 "remote tar shards: keep them on local disk under this many bytes (0: no cache)")
      ->capture_default_str();
  app.add_option("--shard-cache-dir", config.shard_cache_dir,
                 "remote tar shards: the cache's folder (default: conveyor's cache folder)");
  app.add_option("--state-out", config.state_out, "write the iterator's state to FILE after every batch");
  app.add_option("--resume", config.resume,
                 "start from the state in FILE; one FILE per shard of the run that wrote them combines them");
  app.add_option("--batch-log", config.batch_log, "write \"epoch first_index checksum\" per batch to FILE");
  app.add_option("--sample-log", config.sample_log,
                 "write \"epoch index checksum label\" per sample to FILE");
  app.add_option("--format", config.format,
                 "classification (DIR, LIST, shards), segmentation (--data ROOT with images/ and masks/) or "
                 "detection (--data: a COCO instances JSON)")
      ->capture_default_str()
      ->check(CLI::IsMember({"classification", "segmentation", "detection"}));
  app.add_option("--images", config.images, "detection: the images folder (default: images/ beside --data)");
  add_device_options(app, config);
  add_service_options(app, config);
  try {
    app.parse(argc, argv);
    // Checked here rather than with required(): CLI11 would report it before an unknown flag.
    if (config.data.empty()) throw CLI::RequiredError("--data");
    if (config.shard >= config.shards) throw CLI::ValidationError("--shard", "must be below --shards");
    const bool resumable = !config.state_out.empty() || !config.resume.empty() || !config.batch_log.empty() ||
                           !config.sample_log.empty();
    if (resumable && (!config.sweep.empty() || config.repeat != 1))
      throw CLI::ValidationError("--state-out, --resume, --batch-log, --sample-log",
                                 "one run: no --sweep or --repeat");
    if (!config.service.empty() &&
        (config.limit > 0 || config.shuffle_buffer > 0 || config.resume.size() > 1))
      throw CLI::ValidationError("--service",
                                 "not with --limit, --shuffle-buffer or several --resume states");
    if (resumable && config.device != "none")
      throw CLI::ValidationError("--state-out, --resume, --batch-log, --sample-log",
                                 "host batches only: not with --device");
  } catch (const CLI::ParseError& error) {
    std::exit(app.exit(error) == 0 ? 0 : 2);  // --help: 0; a usage error: its message and 2
  }
  config.on_error = on_error == "skip" ? conveyor::OnError::skip : conveyor::OnError::fail;
  if (config.threads == 0)
    config.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return config;
}

// ---- resume (issue 15): one small function per flag ----

// --resume: one state continues that iterator; the states of all shards of a run are combined first.
conveyor::BatchIterator resume_or_begin(const conveyor::BatchedDataset& batches, const Config& config) {
  if (config.resume.empty()) return batches.begin();
  std::vector<conveyor::IteratorState> states;
  for (const std::string& file : config.resume) states.push_back(conveyor::IteratorState::load(file));
  return batches.begin(states.size() == 1 ? states.front() : conveyor::IteratorState::combine(states));
}

// A log file whose lines are flushed one by one (so that a killed run leaves every line it wrote).
std::unique_ptr<std::FILE, int (*)(std::FILE*)> open_log(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(path.empty() ? nullptr : std::fopen(path.c_str(), "w"),
                                                       std::fclose);
  if (!path.empty() && !file) throw std::runtime_error("cannot write " + path);
  return file;
}

// --batch-log: "epoch first_index checksum" (BatchChecksum of the batch's pixels and labels).
void log_batch(std::FILE* log, const conveyor::Batch& batch) {
  if (log == nullptr) return;
  conveyor::BatchChecksum sum;
  sum.add(batch);
  std::fprintf(log, "%llu %llu %s\n", static_cast<unsigned long long>(batch.epoch()),
               static_cast<unsigned long long>(batch.samples()[0].index), sum.hex().c_str());
  std::fflush(log);
}

// --sample-log: "epoch index checksum label" per sample (its pixels): exactly-once checks across shards.
void log_samples(std::FILE* log, const conveyor::Batch& batch) {
  if (log == nullptr) return;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    conveyor::BatchChecksum sum;
    sum.add({batch.image(i).data, batch.image(i).shape().bytes()});
    std::fprintf(log, "%llu %llu %s %lld\n", static_cast<unsigned long long>(batch.samples()[i].epoch),
                 static_cast<unsigned long long>(batch.samples()[i].index), sum.hex().c_str(),
                 static_cast<long long>(batch.labels()[i]));
  }
  std::fflush(log);
}

// --state-out: after the batch's lines, so that the state never covers a batch whose lines are missing.
void save_state(const std::string& path, const conveyor::BatchIterator& it) {
  if (!path.empty()) it.state().save(path);
}

struct Result {
  int threads = 0;
  double images_per_s = 0;  // from the first batch (see the file comment)
  double images_per_s_after_warmup_batches = 0;
  double images_per_s_overall = 0;
  std::uint64_t images = 0;
  std::uint64_t warmup_batches = 0;
  double steady_s = 0;
  double first_batch_s = 0;
  std::string checksum;  // BatchChecksum::hex() of every batch, in order ("off" with --checksum 0); on the
                         // device: device_checksum.h
  conveyor::PipelineStats stats;
  std::optional<conveyor::FeederStats> feeder;  // --device gpu
  double feeder_construction_s = 0;             // --device gpu: making the DeviceFeeder (the CUDA context)
  // The whole process's CPU over the run (every thread: the pipeline's, the shard readers', the consumer):
  // when two ways of reading run at different rates, this tells more work from less of the cores.
  struct Cpu {
    double user_s = 0, system_s = 0;
    long voluntary_switches = 0, involuntary_switches = 0, minor_faults = 0;
  } cpu;
};

Result::Cpu process_cpu() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return {seconds(usage.ru_utime), seconds(usage.ru_stime), usage.ru_nvcsw, usage.ru_nivcsw, usage.ru_minflt};
}

Result::Cpu operator-(const Result::Cpu& a, const Result::Cpu& b) {
  return {a.user_s - b.user_s, a.system_s - b.system_s, a.voluntary_switches - b.voluntary_switches,
          a.involuntary_switches - b.involuntary_switches, a.minor_faults - b.minor_faults};
}

// What --data names, and the shuffle that suits it.
struct DataSource {
  conveyor::Dataset dataset;
  std::size_t shuffle_buffer;  // 0: the whole-epoch shuffle (random-access sources)
};

// --data is a folder (ImageFolder), a list file, tar shards (a file or URL ending in .json is their
// index; else a pattern such as DIR/shard-{000000..000099}.tar or DIR/*.tar, or http(s) URLs of shards).
// Tar shards are shuffled per epoch (by --seed) and, as a stream has no random access, their samples by a
// shuffle buffer, which holds the samples' bytes: 1,000. Files, and shards read at random
// (--shard-random-access 1), take the whole-epoch shuffle.
DataSource open_data(const Config& config) {
  const std::string& data = config.data;
  if (config.format == "segmentation") return {conveyor::Dataset::segmentation_folder(data), 0};
  if (config.format == "detection") {
    const std::filesystem::path images = config.images.empty()
                                             ? std::filesystem::absolute(data).parent_path() / "images"
                                             : std::filesystem::path(config.images);
    return {conveyor::Dataset::coco_detection(data, images), 0};
  }
  const bool url = data.starts_with("http://") || data.starts_with("https://") || data.starts_with("s3://");
  if (!url && std::filesystem::is_directory(data)) return {conveyor::Dataset::image_folder(data), 0};
  conveyor::TarShardOptions shards;
  shards.seed = config.seed;
  if (config.parallel_shards > 0) shards.parallel_shards = config.parallel_shards;
  if (config.shard_read_ahead > 0) shards.queued_samples = config.shard_read_ahead;
  shards.random_access = config.shard_random_access;
  shards.cache.max_bytes = config.shard_cache_bytes;
  shards.cache.folder = config.shard_cache_dir;
  const std::size_t buffer = shards.random_access ? 0 : 1'000;  // read at random: the whole-epoch shuffle
  if (data.ends_with(".json")) return {conveyor::Dataset::tar_shard_index(data, shards), buffer};
  // An s3:// prefix ("s3://bucket/train/") lists its shards.
  if (data.starts_with("s3://") && data.ends_with('/'))
    return {conveyor::Dataset::tar_shards({data}, shards), buffer};
  const bool pattern = url || data.find_first_of("{*?[") != std::string::npos || data.ends_with(".tar") ||
                       data.ends_with(".tar.gz") || data.ends_with(".tgz");
  if (pattern) return {conveyor::Dataset::tar_shards(conveyor::expand_shard_pattern(data), shards), buffer};
  return {conveyor::Dataset::list_file(data), 0};
}

// The timing rule of the file comment, from when each batch arrived.
void set_rates(Result& result, const std::vector<std::pair<Clock::time_point, std::size_t>>& arrivals,
               Clock::time_point start, Clock::time_point end, int threads) {
  const auto rate_after = [&](std::size_t warmup) {
    if (arrivals.size() <= warmup) return 0.0;
    std::uint64_t images = 0;
    for (std::size_t i = warmup; i < arrivals.size(); ++i) images += arrivals[i].second;
    const double seconds = std::chrono::duration<double>(end - arrivals[warmup - 1].first).count();
    return seconds > 0 ? static_cast<double>(images) / seconds : 0.0;
  };
  // W warm-up batches, fewer when the run is too short to leave half of it after them.
  result.warmup_batches = std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)),
                                                std::max<std::size_t>(1, arrivals.size() / 2));
  if (!arrivals.empty()) {
    result.first_batch_s = std::chrono::duration<double>(arrivals.front().first - start).count();
    result.steady_s = std::chrono::duration<double>(end - arrivals[result.warmup_batches - 1].first).count();
    result.images_per_s = rate_after(1);
    result.images_per_s_after_warmup_batches = rate_after(result.warmup_batches);
    result.images_per_s_overall =
        static_cast<double>(result.images) / std::chrono::duration<double>(end - start).count();
  }
}

// The chain's maps: the same augmentation in both modes.
std::vector<conveyor::SampleOp> augmentation(int size) {
  namespace ops = conveyor::ops;
  return {ops::decode_random_resized_crop(size), ops::flip_horizontal(0.5),
          ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4})};
}

// Every map of the chain after the data. The whole-epoch shuffle (seeded from the pipeline seed) over
// files: its state restores in O(1); over tar shards a shuffle buffer (its state replays the stream).
// shard(1, 0) when unsharded, so that every state can be combined into another shard count.
// --service: the same chain made by the data service. The maps left here (flip and distort stay off the
// chain when the GPU runs them) say which of the standard chain's ops the workers run.
conveyor::BatchedDataset service_batches(const Config& config,
                                         const std::shared_ptr<conveyor::TraceRecorder>& trace,
                                         const std::vector<conveyor::SampleOp>& maps) {
  conveyor::service::ChainSpec chain =
      example_support::standard_service_chain(config.data, static_cast<int>(config.size), config.seed, maps);
  chain.parameters["format"] = config.format;
  chain.parameters["on_error"] = config.on_error == conveyor::OnError::skip ? "skip" : "fail";
  if (!config.images.empty()) chain.parameters["images"] = config.images;
  conveyor::service::ServiceOptions options;
  options.batch_size = config.batch;
  options.epochs = config.epochs;
  options.deterministic = config.deterministic;
  options.ranks.rank = static_cast<int>(config.shard);
  options.ranks.world_size = static_cast<int>(config.shards);
  options.split_batches = config.service_split;
  options.local_threads = config.service_local_threads;
  options.local_gpu_first = config.service_local_gpu_first;
  options.streams_per_worker = config.service_streams;
  options.keep_received_memory = config.service_keep_memory;
  options.shared_memory = config.service_shared_memory;
  options.prefetch = config.prefetch;
  example_support::join_service_job(options, config.service_job, config.service_token, config.service_tls);
  return conveyor::service::from_service(config.service, chain, options).with_options({.trace = trace});
}

conveyor::BatchedDataset make_batches(const Config& config, int threads,
                                      const std::shared_ptr<conveyor::TraceRecorder>& trace,
                                      const std::vector<conveyor::SampleOp>& maps) {
  if (!config.service.empty()) return service_batches(config, trace, maps);
  const DataSource source = open_data(config);
  conveyor::Dataset files = source.dataset;
  if (config.limit > 0) files = files.take(config.limit);
  const std::size_t buffer = config.shuffle_buffer > 0 ? config.shuffle_buffer : source.shuffle_buffer;
  conveyor::Dataset chain = (buffer == 0 ? files.shuffle() : files.shuffle(buffer))
                                .repeat(config.epochs)
                                .shard(config.shards, config.shard);
  for (const conveyor::SampleOp& op : maps) chain = chain.map(op);
  return chain
      .with_options(
          {.threads = threads,
           .worker_nice = config.worker_nice >= 0 ? std::optional<int>(config.worker_nice) : std::nullopt,
           .deterministic = config.deterministic,
           .on_error = config.on_error,
           .seed = config.seed,
           .max_in_flight = config.in_flight,
           .trace = trace})
      .batch(config.batch,
             conveyor::BatchOptions{.sample_shape = conveyor::ImageShape{config.size, config.size, 3}})
      .prefetch(config.prefetch);
}

Result run_once_on_device(const Config& config, int threads,
                          const std::shared_ptr<conveyor::TraceRecorder>& trace);

Result run_once_on_host(const Config& config, int threads,
                        const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  const auto start = Clock::now();
  const conveyor::BatchedDataset batches = make_batches(config, threads, trace, augmentation(config.size));

  Result result;
  result.threads = threads;
  conveyor::BatchChecksum checksum;
  conveyor::BatchIterator it = resume_or_begin(batches, config);
  const auto batch_log = open_log(config.batch_log), sample_log = open_log(config.sample_log);
  const int consumer_track = trace ? trace->track("benchmark consumer") : -1;
  std::vector<std::pair<Clock::time_point, std::size_t>> arrivals;  // when each batch came, its size
  while (std::optional<conveyor::Batch> batch = it.next()) {
    arrivals.emplace_back(Clock::now(), batch->size());
    result.images += batch->size();
    log_batch(batch_log.get(), *batch);
    log_samples(sample_log.get(), *batch);
    save_state(config.state_out, it);
    if (!config.checksum) continue;
    conveyor::TraceScope scope(trace.get(), consumer_track, "checksum");
    checksum.add(*batch);
    // The masks and boxes too (issue 35): they must not depend on the thread count either.
    for (const conveyor::TensorView& field :
         {batch->mask_tensor(), batch->box_tensor(), batch->box_class_tensor(), batch->box_count_tensor()})
      if (field) checksum.add({static_cast<const std::uint8_t*>(field.data), field.bytes()});
  }
  set_rates(result, arrivals, start, Clock::now(), threads);
  result.checksum = config.checksum ? checksum.hex() : "off";
  result.stats = it.stats();
  return result;
}

Result run_once(const Config& config, int threads, const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  const Result::Cpu before = process_cpu();
  Result result = config.device != "none" ? run_once_on_device(config, threads, trace)
                                          : run_once_on_host(config, threads, trace);
  result.cpu = process_cpu() - before;
  return result;
}

// The feeder's options for --device gpu: the images a bf16 (or --precision) NHWC model takes, flip and
// distort there (place_pixel_ops moves them off the chain), the hybrid split. Returns the maps the pipeline
// keeps.
std::vector<conveyor::SampleOp> place_on_device(const Config& config, const conveyor::Placement& placement,
                                                conveyor::FeederOptions& options) {
  namespace ops = conveyor::ops;
  ops::NormalizeParams normalize;
  normalize.mean = {123.675f, 116.28f, 103.53f, 0.f};  // ImageNet's, on the 0..255 scale
  normalize.std = {58.395f, 57.12f, 57.375f, 1.f};
  normalize.type = config.precision == "fp32"   ? ops::ElementType::float32
                   : config.precision == "fp16" ? ops::ElementType::float16
                                                : ops::ElementType::bfloat16;
  normalize.layout = ops::TensorLayout::hwc;
  options.normalize = normalize;
  std::vector<conveyor::SampleOp> maps = augmentation(config.size);
  // Samples with masks or boxes keep their flip in the pipeline (place_pixel_ops' rule for fields).
  if (config.gpu_augment) {
    const conveyor::FieldSet fields =
        config.format == "classification" ? conveyor::FieldSet{} : open_data(config).dataset.fields();
    maps = conveyor::place_pixel_ops(std::move(maps), placement, options, fields);
  }
  // Service batches arrive decoded: nvJPEG then takes its share of the splits this process makes itself.
  options.decode.enabled = config.gpu_decode && (config.service.empty() || config.service_local_threads > 0);
  options.decode.share = config.gpu_share;
  options.decode.hardware_pipelining = config.hardware_pipelining;
  options.decode.hardware_pool = config.hardware_pool;
  options.kernel_blocks_per_image = config.kernel_blocks;
  options.decode.remember_share = config.remember_split;
  options.decode.start_at_once = config.start_at_once;
  options.decode.open_before_second = config.open_before_second;
  options.decode.decode_threads = config.decode_threads;
  options.set_up_behind = config.set_up_behind;
  options.host_blocks_ahead = config.host_blocks_ahead;
  options.decode.gpu_hybrid = config.gpu_hybrid;
  options.decode.adapt = config.gpu_adapt;
  options.decode.copy_whole_batch = config.copy_whole_batch;
  options.decode.memory_key =
      "pipeline_throughput " + config.precision + (config.gpu_augment ? " augment" : "");
  return maps;
}

#ifdef CONVEYOR_HAVE_CUDA
Result run_once_on_device(const Config& config, int threads,
                          const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  const conveyor::Placement placement = conveyor::resolve(conveyor::DeviceSpec::parse(config.device));
  if (!placement.gpu) throw std::runtime_error("--device " + config.device + " is not a GPU");
  if (config.context_first) {
    // cudaFree(nullptr) is the runtime's way to make the device's primary context without doing anything.
    if (cudaSetDevice(placement.device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess)
      throw std::runtime_error("--context-first: cannot make the CUDA context of " + placement.description);
  }
  const auto start = Clock::now();
  conveyor::FeederOptions options;
  const std::vector<conveyor::SampleOp> maps = place_on_device(config, placement, options);
  Result result;
  const auto constructing = Clock::now();
  conveyor::DeviceFeeder feeder(placement, options);
  result.feeder_construction_s = std::chrono::duration<double>(Clock::now() - constructing).count();
  const conveyor::BatchedDataset batches = make_batches(config, threads, trace, maps);
  if (config.feeder_warmup) feeder.warmup(batches);  // timed by the feeder (FeederStats::warmup_seconds)
  conveyor::DeviceBatchIterator it = feeder.feed(batches);
  const cudaStream_t stream = conveyor::cuda::consumer_stream(feeder);
  pipeline_bench::DeviceChecksum checksum;

  result.threads = threads;
  const int consumer_track = trace ? trace->track("benchmark consumer") : -1;
  std::vector<std::pair<Clock::time_point, std::size_t>> arrivals;
  while (std::optional<conveyor::DeviceBatch> batch = it.next()) {
    arrivals.emplace_back(Clock::now(), batch->size());
    conveyor::TraceScope scope(trace.get(), consumer_track, "checksum (queued on the GPU)");
    // On the consumer stream, which waits for the batch: the consumer reads what the feeder made, and the
    // ring slot is reused only after these reads (the batch is released at the end of the iteration).
    checksum.add(batch->pixels().data, batch->pixels().bytes(), 2 * batch->sequence(), stream);
    checksum.add(batch->images().data, batch->images().bytes(), 2 * batch->sequence() + 1, stream);
    result.images += batch->size();
  }
  feeder.synchronize();
  const std::uint64_t sum = checksum.value(stream);  // waits for the last batch's reads
  set_rates(result, arrivals, start, Clock::now(), threads);
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(sum));
  result.checksum = hex;
  result.stats = it.stats();
  result.feeder = feeder.stats();
  return result;
}
#else
Result run_once_on_device(const Config& config, int, const std::shared_ptr<conveyor::TraceRecorder>&) {
  throw std::runtime_error("--device " + config.device + ": this build of conveyor has no CUDA");
}
#endif

// The median run of `repeat` (by images/s); the checksum must not change between them.
Result run(const Config& config, int threads, const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  std::vector<Result> runs;
  for (int r = 0; r < config.repeat; ++r)
    runs.push_back(run_once(config, threads, r + 1 == config.repeat ? trace : nullptr));
  for (const Result& r : runs)
    if (r.checksum != runs.front().checksum) throw std::runtime_error("checksum changed between repeats");
  std::sort(runs.begin(), runs.end(),
            [](const Result& a, const Result& b) { return a.images_per_s < b.images_per_s; });
  return runs[runs.size() / 2];
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

using Json = nlohmann::ordered_json;  // ordered: the fields stay in the order written here

Json point_json(const Result& r, double efficiency) {
  return {{"threads", r.threads},
          {"timing_rule", "from_first_batch"},
          {"images_per_s", r.images_per_s},
          {"images_per_s_after_first_batch", r.images_per_s},  // the same figure, its name before 2026-11-27
          {"images_per_s_after_warmup_batches", r.images_per_s_after_warmup_batches},
          {"images_per_s_overall", r.images_per_s_overall},
          {"images", r.images},
          {"warmup_batches", r.warmup_batches},
          {"time_to_first_batch_s", r.first_batch_s},
          {"steady_s", r.steady_s},
          {"efficiency", efficiency},
          {"checksum", r.checksum},
          {"skipped", r.stats.skipped}};
}

// --device gpu: what ran there and how the images were split between the CPU and the GPU decoder.
Json device_json(const Config& config, const Result& r) {
  const conveyor::FeederStats& f = *r.feeder;
  const conveyor::PipelineStats& p = r.stats;
  Json reasons = Json::object();
  for (const auto& [reason, count] : f.fallback_reasons) reasons[reason] = count;
  Json paths = Json::object();
  for (const auto& [path, count] : f.gpu_decode_paths) paths[path] = count;
  return {{"device", config.device},
          {"gpu_augment", config.gpu_augment},
          {"gpu_decode", config.gpu_decode},
          {"gpu_share_asked", config.gpu_share},
          {"hardware_pipelining", config.hardware_pipelining},
          {"precision", config.precision},
          {"decoder", f.decoder},
          {"images_decoded_by_the_pipeline", p.elements_out - p.deferred},
          {"images_deferred_to_the_gpu", p.deferred},
          {"gpu_decoded", f.gpu_decoded},
          {"cpu_fallbacks", f.cpu_fallbacks},
          {"decode_failures", f.decode_failures},
          {"declined_by_the_op", f.declined},
          {"fallback_reasons", reasons},
          {"gpu_share_at_end", f.gpu_share},
          {"feeder_warmup", config.feeder_warmup},
          {"feeder_warmup_s", f.warmup_seconds},
          {"warmup_decode", f.warmup},
          {"remember_split", config.remember_split},
          {"split_memory", f.split_memory},
          {"hardware_pool", config.hardware_pool},
          {"kernel_blocks", config.kernel_blocks},
          {"decode_host_s", f.decode_host_seconds},
          {"decode_wait_s", f.decode_wait_seconds},
          {"decode_check_s", f.decode_check_seconds},
          {"decode_submit_s", f.decode_submit_seconds},
          {"decode_resize_s", f.decode_resize_seconds},
          {"decode_gpu_s", f.decode_gpu_seconds},
          {"copy_s", f.copy_seconds},
          {"feeder_construction_s", r.feeder_construction_s},
          {"set_up_behind", config.set_up_behind},
          {"host_blocks_ahead", config.host_blocks_ahead},
          {"context_first", config.context_first},
          {"device_setup_s", f.device_setup_seconds},
          {"device_setup", f.device_setup},
          {"start_at_once", config.start_at_once},
          {"startup", f.startup},
          {"open_before_second", config.open_before_second},
          {"decode_threads", config.decode_threads},
          {"decoder_ready_s", f.decoder_ready_seconds},
          {"second_decoder_s", f.second_decoder_seconds},
          {"first_stage_s", f.first_stage_seconds},
          {"host_blocks", f.host_blocks},
          {"host_blocks_on_demand", f.host_blocks_on_demand},
          {"host_blocks_on_demand_s", f.host_blocks_on_demand_seconds},
          {"host_blocks_made_ahead", f.host_blocks_made_ahead},
          {"gpu_hybrid", config.gpu_hybrid},
          {"gpu_decode_paths", paths},
          {"gpu_adapt", config.gpu_adapt},
          {"copy_whole_batch", config.copy_whole_batch},
          {"bytes_not_copied", f.bytes_not_copied}};
}

void write_json(const Config& config, const Result& main, const std::vector<Result>& sweep,
                const std::vector<double>& efficiency) {
  Json out;
  out["benchmark"] = "pipeline_throughput";
  out["machine"] = {{"hostname", hostname()},
                    {"nproc", std::thread::hardware_concurrency()},
                    {"commit", conveyor::bench::recorded_commit()}};
  out["format"] = config.format;
  out["service"] = config.service;
  out["service_local_threads"] = config.service_local_threads;
  out["service_local_gpu_first"] = config.service_local_gpu_first;
  out["service_streams"] = config.service_streams;
  out["service_keep_memory"] = config.service_keep_memory;
  out["service_shared_memory"] = config.service_shared_memory;
  out["sources"] = Json::array();
  for (const conveyor::SourcePart& part : main.stats.source_parts)
    out["sources"].push_back(
        {{"name", part.name},
         {"batches", part.batches},
         {"samples", part.elements},
         {"wire_bytes", part.wire_bytes},
         {"shared_bytes", part.shared_bytes},
         {"bytes_per_sample", part.elements ? static_cast<double>(part.wire_bytes) / part.elements : 0.0},
         {"busy_s", part.busy_seconds},
         {"lost", part.failures}});
  out["source_note"] = main.stats.source_note;
  out["config"] = {{"data", config.data},
                   {"format", config.format},
                   {"batch", config.batch},
                   {"size", config.size},
                   {"epochs", config.epochs},
                   {"seed", config.seed},
                   {"on_error", config.on_error == conveyor::OnError::skip ? "skip" : "fail"},
                   {"limit", config.limit},
                   {"prefetch", config.prefetch},
                   {"repeat", config.repeat},
                   {"in_flight", main.stats.max_in_flight},
                   {"deterministic", config.deterministic},
                   {"checksum", config.checksum},
                   {"parallel_shards", config.parallel_shards},
                   {"shard_read_ahead", config.shard_read_ahead},
                   {"shard_random_access", config.shard_random_access},
                   {"shard_cache_bytes", config.shard_cache_bytes},
                   {"shuffle_buffer", config.shuffle_buffer},
                   {"worker_nice", config.worker_nice}};
  out["timing_rule"] = "from_first_batch";  // images_per_s: see the file comment
  out["images_per_s"] = main.images_per_s;
  out["images_per_s_after_first_batch"] = main.images_per_s;  // the same figure, its name before 2026-11-27
  out["images_per_s_after_warmup_batches"] = main.images_per_s_after_warmup_batches;
  out["images_per_s_overall"] = main.images_per_s_overall;
  out["warmup_batches"] = main.warmup_batches;
  out["threads"] = main.threads;
  out["images"] = main.images;
  out["skipped"] = main.stats.skipped;
  out["checksum"] = main.checksum;
  out["peak_rss_mb"] = peak_rss_mb();
  const Result::Cpu& cpu = main.cpu;
  out["cpu"] = {{"user_s", cpu.user_s},
                {"system_s", cpu.system_s},
                {"us_per_image", main.images ? 1e6 * (cpu.user_s + cpu.system_s) / main.images : 0.0},
                {"voluntary_switches", cpu.voluntary_switches},
                {"involuntary_switches", cpu.involuntary_switches},
                {"minor_faults", cpu.minor_faults}};
  out["time_to_first_batch_s"] = main.first_batch_s;
  out["steady_s"] = main.steady_s;
  out["pinned"] = main.stats.pinned;
  out["pool_buffers"] = main.stats.pool_buffers;
  out["skip_reasons"] = Json::object();
  for (const auto& [reason, count] : main.stats.skip_reasons) out["skip_reasons"][reason] = count;
  out["stages"] = Json::array();
  for (const conveyor::StageStats& s : main.stats.stages)
    out["stages"].push_back({{"name", s.name},
                             {"count", s.count},
                             {"busy_s", static_cast<double>(s.busy_ns) / 1e9},
                             {"failures", s.failures}});
  out["queue"] = {{"max", main.stats.queue.max}, {"mean_seen_by_consumer", main.stats.queue.mean}};
  out["consumer_wait_s"] = static_cast<double>(main.stats.consumer_wait_ns) / 1e9;
  const conveyor::RemoteReadStats& remote = main.stats.remote;
  out["remote"] = {{"shards_opened", remote.shards_opened}, {"cache_hits", remote.cache_hits},
                   {"cache_misses", remote.cache_misses},   {"uncached", remote.uncached},
                   {"bytes_fetched", remote.bytes_fetched}, {"bytes_from_cache", remote.bytes_from_cache},
                   {"evictions", remote.evictions},         {"retries", remote.retries}};
  out["checksums_equal"] =
      std::all_of(sweep.begin(), sweep.end(), [&](const Result& r) { return r.checksum == main.checksum; });
  if (main.feeder) out["device"] = device_json(config, main);
  out["sweep"] = Json::array();
  for (std::size_t i = 0; i < sweep.size(); ++i) out["sweep"].push_back(point_json(sweep[i], efficiency[i]));

  std::ofstream file(config.json, std::ios::binary | std::ios::trunc);
  // Paths need not be UTF-8: a byte that is not becomes U+FFFD rather than an exception.
  file << out.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
  if (!file.flush()) throw std::runtime_error("cannot write " + config.json);
}

// --device gpu: one line on the split, one per fallback reason.
void print_split(const conveyor::FeederStats& f, const conveyor::PipelineStats& p) {
  std::printf(
      "device: %llu images decoded by the pipeline, %llu deferred to the GPU (nvJPEG %llu, CPU fallbacks "
      "%llu, "
      "failed %llu), %llu declined by the op; GPU share at the end %.3f; decoder host %.3f s (waiting for "
      "the "
      "GPU %.3f, checks %.3f, nvJPEG decode calls %.3f, resize %.3f), GPU %.3f s\n"
      "decoder: %s\n",
      static_cast<unsigned long long>(p.elements_out - p.deferred),
      static_cast<unsigned long long>(p.deferred), static_cast<unsigned long long>(f.gpu_decoded),
      static_cast<unsigned long long>(f.cpu_fallbacks), static_cast<unsigned long long>(f.decode_failures),
      static_cast<unsigned long long>(f.declined), f.gpu_share, f.decode_host_seconds, f.decode_wait_seconds,
      f.decode_check_seconds, f.decode_submit_seconds, f.decode_resize_seconds, f.decode_gpu_seconds,
      f.decoder.c_str());
  for (const auto& [reason, count] : f.fallback_reasons)
    std::printf("  %llu x %s\n", static_cast<unsigned long long>(count), reason.c_str());
  if (f.warmup_seconds > 0) std::printf("feeder warm-up %.3f s: %s\n", f.warmup_seconds, f.warmup.c_str());
  if (!f.startup.empty())
    std::printf("GPU decoder: %s (first stage() %.3f s)\n", f.startup.c_str(), f.first_stage_seconds);
  std::printf(
      "page-locked batch buffers: %llu made, %llu of them while the pipeline waited (%.3f s), %llu made "
      "ahead\n",
      static_cast<unsigned long long>(f.host_blocks),
      static_cast<unsigned long long>(f.host_blocks_on_demand), f.host_blocks_on_demand_seconds,
      static_cast<unsigned long long>(f.host_blocks_made_ahead));
  for (const auto& [path, count] : f.gpu_decode_paths)
    std::printf("  %llu GPU-decoded by nvJPEG's %s path\n", static_cast<unsigned long long>(count), path.c_str());
  if (!f.split_memory.empty()) std::printf("split: %s\n", f.split_memory.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const Config config = parse(argc, argv);
  try {
    const auto trace = config.trace.empty() ? nullptr : std::make_shared<conveyor::TraceRecorder>();
    std::vector<Result> sweep;
    std::vector<double> efficiency;
    Result main_run;
    if (config.sweep.empty()) {
      main_run = run(config, config.threads, trace);
    } else {
      std::printf("%8s %12s %11s %10s  %s\n", "threads", "images/s", "efficiency", "first (s)", "checksum");
      for (std::size_t i = 0; i < config.sweep.size(); ++i) {
        const bool last = i + 1 == config.sweep.size();
        sweep.push_back(run(config, config.sweep[i], last ? trace : nullptr));
        // Efficiency against the first point (1 thread in a 1,2,4,... sweep): ips(N) / (N / n0 * ips(n0)).
        const Result& base = sweep.front();
        efficiency.push_back(base.images_per_s > 0
                                 ? sweep.back().images_per_s * base.threads /
                                       (static_cast<double>(sweep.back().threads) * base.images_per_s)
                                 : 0.0);
        std::printf("%8d %12.1f %10.1f%% %10.3f  %s\n", sweep.back().threads, sweep.back().images_per_s,
                    100.0 * efficiency.back(), sweep.back().first_batch_s, sweep.back().checksum.c_str());
        std::fflush(stdout);
      }
      main_run = sweep.back();
    }
    std::printf(
        "threads %d: %.1f images/s from the first batch (%.1f after %llu batches, %.1f counting start-up; "
        "%llu images, first batch after %.3f s), skipped %llu, checksum %s, peak RSS %.1f MB\n",
        main_run.threads, main_run.images_per_s, main_run.images_per_s_after_warmup_batches,
        static_cast<unsigned long long>(main_run.warmup_batches), main_run.images_per_s_overall,
        static_cast<unsigned long long>(main_run.images), main_run.first_batch_s,
        static_cast<unsigned long long>(main_run.stats.skipped), main_run.checksum.c_str(), peak_rss_mb());
    std::printf("%s", conveyor::format_stats(main_run.stats).c_str());
    if (main_run.feeder) {
      print_split(*main_run.feeder, main_run.stats);
      std::printf("making the DeviceFeeder (the process's CUDA context with it) took %.3f s of the first batch's "
                  "%.3f s\n",
                  main_run.feeder_construction_s, main_run.first_batch_s);
    }
    for (const Result& r : sweep)
      if (r.checksum != main_run.checksum)
        std::printf("WARNING: checksum differs at %d threads\n", r.threads);
    if (!config.json.empty()) write_json(config, main_run, sweep, efficiency);
    if (trace) trace->write_json(config.trace);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "pipeline_throughput: %s\n", error.what());
    return 1;
  }
  return 0;
}
