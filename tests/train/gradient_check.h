// Finite-difference gradient checks for the CPU reference, in double: the analytical gradient of
// L = sum(R * f(p)) (R fixed random weights) must match central differences of L.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "conveyor/random.h"

namespace conveyor::testing {

inline std::vector<double> random_values(std::size_t n, std::uint64_t seed, double lo = -1, double hi = 1) {
  Rng rng(seed);
  std::vector<double> v(n);
  for (double& x : v) x = rng.uniform(lo, hi);
  return v;
}

// Values at least `gap` apart (a shuffled grid), so that max pooling has no ties to flip.
inline std::vector<double> distinct_values(std::size_t n, std::uint64_t seed, double gap = 0.01) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = (static_cast<double>(i) - static_cast<double>(n) / 2) * gap;
  Rng rng(seed);
  for (std::size_t i = n; i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// max |numerical - analytical| / max |analytical| over every element of `param`; loss() recomputes L
// from the current values of `param`.
inline double gradient_error(std::vector<double>& param, const std::vector<double>& analytical,
                             const std::function<double()>& loss, double h = 1e-5) {
  double worst = 0, scale = 1e-12;
  for (std::size_t i = 0; i < param.size(); ++i) {
    const double keep = param[i];
    param[i] = keep + h;
    const double up = loss();
    param[i] = keep - h;
    const double down = loss();
    param[i] = keep;
    worst = std::max(worst, std::abs((up - down) / (2 * h) - analytical[i]));
    scale = std::max(scale, std::abs(analytical[i]));
  }
  return worst / scale;
}

}  // namespace conveyor::testing
