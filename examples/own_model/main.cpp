// own_model DATA [--steps N] (--help lists the rest): trains a model of the user's own (a two-layer
// perceptron written with cuBLAS and a few CUDA kernels in mlp.cu; not conveyor's Trainer) on Fashion-MNIST
// JPEGs fed by a conveyor pipeline, through the public API only:
//   - the Dataset decodes and batches on the CPU into page-locked memory (DeviceFeeder::feed sets it),
//   - the DeviceFeeder copies each batch and normalizes it on the GPU (FeederOptions::normalize),
//   - the batch is made ready on the model's own CUDA stream (conveyor/cuda/stream.h), and its memory is
//     reused only once that stream has passed the point where the loop let the batch go.
// Prints the loss every 20 steps (and writes them with --csv).
#include <cuda_runtime_api.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "conveyor/cuda/device.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/stream.h"
#include "conveyor/dataset.h"
#include "conveyor/ops.h"
#include "device_option.h"
#include "mlp.h"

namespace {

// The model's stream, owned here as a user's program would own it.
class Stream {
 public:
  Stream() {
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess)
      throw std::runtime_error("cannot create a CUDA stream");
  }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) try {
  CLI::App app{"Trains a model of its own (cuBLAS + CUDA kernels) from a conveyor pipeline."};
  std::string data, device = "auto", csv_path;
  int steps = 600, batch = 256, hidden = 256;
  float learning_rate = 0.1f;
  app.add_option("data", data,
                 "Fashion-MNIST JPEGs as an ImageFolder tree (the train/ folder that "
                 "data/fashion_mnist/make_fashion_mnist.sh makes; required)");
  app.add_option("--steps", steps, "training steps")->capture_default_str()->check(CLI::Range(0, 10000000));
  app.add_option("--batch", batch, "images per step")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("--hidden", hidden, "hidden units")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("--lr", learning_rate, "SGD learning rate")->capture_default_str();
  app.add_option("--device", device, "auto, gpu or gpu:N")
      ->capture_default_str()
      ->check(example_support::device_spec());
  app.add_option("--csv", csv_path, "write step,loss lines here");
  try {
    app.parse(argc, argv);
    // Checked here rather than with required(): CLI11 would report it before an unknown flag.
    if (data.empty()) throw CLI::RequiredError("data");
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; a usage error: its message and 2
  }

  const conveyor::Placement placement = conveyor::resolve(conveyor::DeviceSpec::parse(device));
  if (!placement.gpu) {
    std::fprintf(stderr, "own_model trains on a GPU, and none is in use here: %s\n",
                 placement.reason.c_str());
    return 2;
  }
  const auto batches = conveyor::Dataset::image_folder(data)
                           .shuffle(60'000, /*seed=*/1)
                           .repeat()
                           .map(conveyor::ops::decode({.color = conveyor::ops::ColorMode::gray}))
                           .with_options({.seed = 1})
                           .batch(static_cast<std::size_t>(batch), conveyor::ImageShape{28, 28, 1}, true)
                           .prefetch(4);
  conveyor::ops::NormalizeParams normalize;  // Fashion-MNIST's mean and std on the 0..255 scale
  normalize.mean[0] = 72.94f;
  normalize.std[0] = 90.02f;
  normalize.type = conveyor::ops::ElementType::float32;
  conveyor::DeviceFeeder feeder(placement, {.depth = 3, .normalize = normalize});

  Stream stream;
  conveyor::cuda::set_consumer_stream(feeder, stream.get());  // batches are ready on the model's stream
  own_model::Mlp model(28 * 28, hidden, 10, batch, stream.get(), /*seed=*/1);
  std::printf("%s\nown model: 784-%d-10 perceptron (cuBLAS + CUDA kernels), batch %d, lr %g\n",
              placement.description.c_str(), hidden, batch, static_cast<double>(learning_rate));

  std::ofstream csv;
  if (!csv_path.empty()) {
    csv.open(csv_path);
    csv << "step,loss\n";
  }
  auto it = feeder.feed(batches);
  for (int step = 1; step <= steps; ++step) {
    std::optional<conveyor::DeviceBatch> b = it.next();
    if (!b) break;
    model.step(b->images().as<const float>(), b->labels().as<const std::int64_t>(),
               static_cast<int>(b->size()), learning_rate);
    // `b` goes out of scope here: the feeder may refill its slot once the model's stream is past this step.
    if (step % 20 == 0 || step == 1) {
      const float loss = model.last_loss();
      std::printf("step %4d  loss %.4f\n", step, static_cast<double>(loss));
      if (csv) csv << step << ',' << loss << '\n';
    }
  }
  const conveyor::FeederStats stats = feeder.stats();
  std::printf("fed %llu batches, %.1f MB copied in %.3f s of copy-engine time\n",
              static_cast<unsigned long long>(stats.batches), static_cast<double>(stats.bytes) / 1e6,
              stats.copy_seconds);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "own_model: %s\n", e.what());
  return 1;
}
