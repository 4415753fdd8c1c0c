// Statistical checks for random ops: whether draws follow the distribution an op documents. The thresholds
// come from inequalities that hold at every sample size, for any distribution (no asymptotics), so a
// check's false-alarm rate is known: at most kFalseAlarm (the chi-square's, from a close approximation,
// about that). With the tests' fixed seeds a check is deterministic; the bound says that another seed set
// would not start failing by chance either.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <sstream>
#include <vector>

namespace conveyor::testing {

// The chance that draws from the right distribution fail one check.
inline constexpr double kFalseAlarm = 1e-6;

// The distance between the empirical CDF of n independent draws and their true CDF that is exceeded with
// probability at most `false_alarm`: the Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant,
// P(sup |F_n - F| > e) <= 2 exp(-2 n e^2), for continuous and discrete distributions alike. Hoeffding's
// inequality gives the same bound for the fraction of successes among n Bernoulli draws. At 20,000 draws
// it is 0.019.
inline double dkw_bound(std::size_t n, double false_alarm = kFalseAlarm) {
  return std::sqrt(std::log(2 / false_alarm) / (2.0 * static_cast<double>(n)));
}

// Whether `distance`, the largest between an empirical CDF of n draws and the expected CDF (at `where`),
// is within dkw_bound plus `model_error`.
inline ::testing::AssertionResult within_dkw_bound(std::size_t n, double distance, double where,
                                                   double model_error) {
  const double bound = dkw_bound(n) + model_error;
  if (distance <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "the empirical CDF of " << n << " draws is " << distance << " from the expected one at " << where
         << " (allowed " << bound << ")";
}

// Kolmogorov-Smirnov: the draws come from the continuous distribution with CDF `cdf`. `model_error` is how
// far the CDF of what the test observes may honestly differ from `cdf` (windows rounded to whole pixels,
// say); it is added to the bound.
inline ::testing::AssertionResult follows_cdf(std::vector<double> draws,
                                              const std::function<double(double)>& cdf,
                                              double model_error = 0) {
  if (draws.empty()) return ::testing::AssertionFailure() << "no draws";
  std::sort(draws.begin(), draws.end());
  const double n = static_cast<double>(draws.size());
  double distance = 0, worst_at = draws[0];
  for (std::size_t i = 0; i < draws.size(); ++i) {
    const double f = cdf(draws[i]);
    const double d = std::max(static_cast<double>(i + 1) / n - f, f - static_cast<double>(i) / n);
    if (d > distance) distance = d, worst_at = draws[i];
  }
  return within_dkw_bound(draws.size(), distance, worst_at, model_error);
}

// The same for integer draws, with cdf(k) = P(X <= k) and every k outside [lo, hi] impossible.
inline ::testing::AssertionResult follows_integer_cdf(const std::vector<int>& draws, int lo, int hi,
                                                      const std::function<double(int)>& cdf,
                                                      double model_error = 0) {
  if (draws.empty()) return ::testing::AssertionFailure() << "no draws";
  const auto [min, max] = std::minmax_element(draws.begin(), draws.end());
  const int first = std::min(lo, *min) - 1, last = std::max(hi, *max);
  std::vector<std::size_t> counts(static_cast<std::size_t>(last - first) + 1, 0);
  for (const int d : draws) ++counts[static_cast<std::size_t>(d - first)];
  const double n = static_cast<double>(draws.size());
  double distance = 0, below = 0;
  int worst_at = first;
  for (int k = first; k <= last; ++k) {
    below += static_cast<double>(counts[static_cast<std::size_t>(k - first)]);
    const double expected = k < lo ? 0.0 : k >= hi ? 1.0 : cdf(k);
    if (std::abs(below / n - expected) > distance) distance = std::abs(below / n - expected), worst_at = k;
  }
  return within_dkw_bound(draws.size(), distance, worst_at, model_error);
}

// Uniform on [lo, hi]: follows_cdf against the uniform CDF.
inline ::testing::AssertionResult uniform_on(const std::vector<double>& draws, double lo, double hi,
                                             double model_error = 0) {
  return follows_cdf(
      draws, [lo, hi](double x) { return std::clamp((x - lo) / (hi - lo), 0.0, 1.0); }, model_error);
}

// The draws of a uniform distribution on [lo, hi] fill the interval: none outside it (give or take
// `model_error`), and the smallest and the largest within the distance of the ends that n uniform draws
// leave with probability at most kFalseAlarm: (1 - e)^n <= exp(-n e) gives e = ln(1 / kFalseAlarm) / n of
// the width (0.07 % at 20,000 draws). A draw from a narrower interval fails here even where a
// distribution test might forgive it.
inline ::testing::AssertionResult reaches_both_ends(const std::vector<double>& draws, double lo, double hi,
                                                    double model_error = 0) {
  if (draws.empty()) return ::testing::AssertionFailure() << "no draws";
  const auto [min, max] = std::minmax_element(draws.begin(), draws.end());
  const double reach =
      (hi - lo) * std::log(1 / kFalseAlarm) / static_cast<double>(draws.size()) + model_error;
  std::ostringstream problem;
  if (*min < lo - model_error || *max > hi + model_error)
    problem << "draws outside [" << lo << ", " << hi << "]: ";
  else if (*min > lo + reach || *max < hi - reach)
    problem << "an end of [" << lo << ", " << hi << "] not reached (allowed " << reach << " from it): ";
  else
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << problem.str() << "the draws span [" << *min << ", " << *max << "]";
}

// `successes` of n Bernoulli draws: their probability is p (Hoeffding, the bound of dkw_bound).
inline ::testing::AssertionResult succeeds_with_probability(std::size_t successes, std::size_t n, double p) {
  const double rate = static_cast<double>(successes) / static_cast<double>(n), bound = dkw_bound(n);
  if (std::abs(rate - p) <= bound) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << successes << " of " << n << " (" << rate << ") where " << p
                                       << " was expected (allowed " << bound << ")";
}

// Pearson's chi-square: counts of equally likely outcomes (each count one outcome's). The threshold is the
// (1 - kFalseAlarm) quantile of the chi-square distribution with cells - 1 degrees of freedom, by the
// Wilson-Hilferty approximation (good to a few percent there for 10 or more degrees of freedom), and an
// outcome never seen fails outright.
inline ::testing::AssertionResult equally_likely(const std::vector<std::size_t>& counts) {
  if (counts.size() < 2) return ::testing::AssertionFailure() << "fewer than two outcomes";
  double n = 0;
  for (const std::size_t c : counts) n += static_cast<double>(c);
  const double expected = n / static_cast<double>(counts.size());
  double statistic = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) return ::testing::AssertionFailure() << "outcome " << i << " never occurred";
    const double d = static_cast<double>(counts[i]) - expected;
    statistic += d * d / expected;
  }
  // z: the standard normal's (1 - kFalseAlarm) quantile, by bisection on erfc.
  double z_lo = 0, z_hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double z = (z_lo + z_hi) / 2;
    (0.5 * std::erfc(z / std::sqrt(2.0)) > kFalseAlarm ? z_lo : z_hi) = z;
  }
  const double dof = static_cast<double>(counts.size() - 1), a = 2 / (9 * dof);
  const double threshold = dof * std::pow(1 - a + z_lo * std::sqrt(a), 3);
  if (statistic <= threshold) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "chi-square " << statistic << " over " << counts.size()
                                       << " outcomes (allowed " << threshold << ")";
}

}  // namespace conveyor::testing
