#include "src/train/cpu_steps.h"

#include <cstring>
#include <utility>

#include "conveyor/error.h"
#include "src/train/layers/cpu_parallel.h"

namespace conveyor::train {

void CpuSteps::stage(const DeviceBatch& batch, std::size_t count, const ops::NormalizeParams& params,
                     bool take_images, const nn::Tensor& input, std::int64_t* labels) {
  if (batch.on_device()) throw InvalidArgument("trainer: the CPU reference needs batches in host memory");
  const ImageShape shape = batch.sample_shape();
  const std::size_t image = shape.bytes();
  if (take_images) {
    std::memcpy(input.as<float>(), batch.images().data, count * image * sizeof(float));
  } else {
    const auto* pixels = batch.pixels().as<const std::uint8_t>();
    nn::cpu::parallel_ranges(count, 1, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i)
        ops::normalize(ConstImageView(pixels + i * image, shape), params, input.as<float>() + i * image);
    });
  }
  std::memcpy(labels, batch.labels().data, count * sizeof(std::int64_t));
}

void CpuSteps::end_step(std::vector<double>& times_ms) {
  times_ms.push_back(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count());
}

void CpuSteps::add_rows(int rows, const float* row_loss, const int* row_correct) {
  for (int i = 0; i < rows; ++i) {
    if (row_correct[i] < 0) {
      ++sums_.bad_labels;
    } else {
      sums_.loss += row_loss[i];
      sums_.correct += static_cast<std::size_t>(row_correct[i]);
    }
  }
  sums_.rows += static_cast<std::size_t>(rows);
}

EvaluationSums CpuSteps::take_sums() { return std::exchange(sums_, EvaluationSums{}); }

}  // namespace conveyor::train
