#include "options.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string_view>

namespace feed_vs_prefetch {
namespace {

constexpr const char* kUsage =
    "usage: feed_vs_prefetch [--data DIR] [--modes feed,parallel,prefetch] [--threads N] [--batch B]\n"
    "                        [--steps S] [--warmup W] [--model small|resnet18] [--size S] [--width W]\n"
    "                        [--device auto|cpu|gpu|gpu:N] [--precision bf16|fp16|fp32]\n"
    "                        [--trace-dir DIR] [--plot FILE.png] [--json FILE] [--seed K]\n"
    "                        [--gpus N] [--deterministic] [--record-loss]\n"
    "Trains the same model on the same data three ways and shows what the input pipeline gains:\n"
    "  feed      one image after another on the training thread, pageable memory, synchronous copy\n"
    "  parallel  the batch made by the parallel map on the thread pool, still no overlap with the step\n"
    "  prefetch  the full pipeline: parallel map into pinned buffers, prefetch, asynchronous copy\n"
    "With no arguments it uses the demo data of ./conveyor.sh demo and the GPU when there is one.\n"
    "Data parallel (prefetch only): --gpus N trains one replica per GPU 0..N-1 of this process, gradients\n"
    "averaged over NCCL; under a launcher (scripts/launch.sh N ..., torchrun) each process trains on its\n"
    "LOCAL_RANK's GPU and the ranks meet at MASTER_ADDR:MASTER_PORT. Each replica reads its share of the\n"
    "data (equal batches per replica) with --threads threads; --batch is per replica; with several ranks\n"
    "--json FILE becomes FILE.rankR.json per rank.\n"
    "  --deterministic  deterministic convolution algorithms (same losses every run)\n"
    "  --record-loss    every step's loss in the JSON (reading it synchronises after each step)\n";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "feed_vs_prefetch: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

int to_int(std::string_view flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < 0 || value > 1'000'000)
    usage_error(std::string(flag) + " needs a non-negative number, got '" + text + "'");
  return static_cast<int>(value);
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> parts;
  std::stringstream stream(list);
  for (std::string part; std::getline(stream, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options options;
  options.data = "data/generated/imagenet-like-1000/train";
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (flag == "--deterministic" || flag == "--record-loss") {  // switches: no value
      (flag == "--deterministic" ? options.deterministic : options.record_loss) = true;
      continue;
    }
    if (i + 1 >= argc) usage_error(std::string(flag) + " needs a value");
    const char* value = argv[++i];
    options.modes_given |= flag == "--modes";
    if (flag == "--data") options.data = value;
    else if (flag == "--modes") options.modes = split(value);
    else if (flag == "--threads") options.threads = to_int(flag, value);
    else if (flag == "--batch") options.batch = to_int(flag, value);
    else if (flag == "--steps") options.steps = to_int(flag, value);
    else if (flag == "--warmup") options.warmup = to_int(flag, value);
    else if (flag == "--model") options.model = value;
    else if (flag == "--size") options.size = to_int(flag, value);
    else if (flag == "--width") options.width = to_int(flag, value);
    else if (flag == "--device") options.device = value;
    else if (flag == "--precision") options.precision = value;
    else if (flag == "--trace-dir") options.trace_dir = value;
    else if (flag == "--plot") options.plot = value;
    else if (flag == "--json") options.json = value;
    else if (flag == "--seed") options.seed = static_cast<unsigned long long>(to_int(flag, value));
    else if (flag == "--gpus") options.gpus = to_int(flag, value);
    else usage_error("unknown option " + std::string(flag));
  }
  for (const auto& mode : options.modes)
    if (mode != "feed" && mode != "parallel" && mode != "prefetch") usage_error("unknown mode " + mode);
  if (options.modes.empty()) usage_error("--modes names no mode");
  if (options.gpus < 1) usage_error("--gpus needs at least 1");
  if (!options.model.empty() && options.model != "small" && options.model != "resnet18")
    usage_error("--model is small or resnet18");
  return options;
}

}  // namespace feed_vs_prefetch
