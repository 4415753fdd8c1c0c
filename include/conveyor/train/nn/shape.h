// Shapes of the tensors the layers work on. Every activation is NHWC (channels innermost, the layout
// tensor cores want); convolution filters are KRSC (output channel, row, column, input channel).
#pragma once

#include <cstddef>

namespace conveyor::nn {

// A batch of feature maps: n images of h x w pixels with c channels, stored NHWC.
struct Shape4 {
  int n = 0;
  int h = 0;
  int w = 0;
  int c = 0;

  std::size_t count() const noexcept {
    return static_cast<std::size_t>(n) * static_cast<std::size_t>(h) * static_cast<std::size_t>(w) *
           static_cast<std::size_t>(c);
  }
  // Pixels per channel over the whole batch (what batch norm averages over).
  std::size_t rows() const noexcept {
    return static_cast<std::size_t>(n) * static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  }
  friend bool operator==(const Shape4&, const Shape4&) = default;
};

// A square convolution (no dilation, no groups), cross-correlation as in every framework.
struct ConvGeometry {
  Shape4 input;
  int out_channels = 0;
  int kernel = 1;
  int stride = 1;
  int pad = 0;

  Shape4 output() const noexcept {
    return {input.n, (input.h + 2 * pad - kernel) / stride + 1, (input.w + 2 * pad - kernel) / stride + 1,
            out_channels};
  }
  std::size_t weight_count() const noexcept {
    return static_cast<std::size_t>(out_channels) * static_cast<std::size_t>(kernel) *
           static_cast<std::size_t>(kernel) * static_cast<std::size_t>(input.c);
  }
};

// A square pooling window. Average pooling divides by the whole window (padding counted as zeros), as
// cuDNN's CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING and PyTorch's default do.
struct PoolGeometry {
  Shape4 input;
  int window = 2;
  int stride = 2;
  int pad = 0;

  Shape4 output() const noexcept {
    return {input.n, (input.h + 2 * pad - window) / stride + 1, (input.w + 2 * pad - window) / stride + 1,
            input.c};
  }
};

}  // namespace conveyor::nn
