// Which gradients are all-reduced together, and when a group is complete. A model's gradients live in two
// flat arrays (weights in the compute type, vectors in float32; src/train/parameters.h); a bucket is a
// contiguous range of one of them, holding the gradients of consecutive parameters. The backward pass makes
// gradients roughly in the reverse of the order the parameters were declared (classifier first, stem last),
// so buckets are cut from the end of each array backwards: the first bucket fills first and its all-reduce
// runs while the backward pass goes on. The buckets of an array tile it (the alignment gaps between
// tensors, zeros, travel with their neighbours), so reducing every bucket reduces the whole array.
//
// Per step, each parameter's gradient is reported once as it is made (made()); the call that completes a
// bucket returns it, whatever order the reports come in.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "src/train/parameters.h"

namespace conveyor::train {

struct GradientBucket {
  ParamGroup group = ParamGroup::weights;  // weights or vectors: which gradient array
  std::size_t begin = 0, end = 0;          // element range of that array
  std::size_t parameters = 0;              // whose gradients it holds
};

class GradientBuckets {
 public:
  // Buckets of at most about `bucket_bytes` of gradients each (weight gradients of `weight_bytes` bytes per
  // element, vector gradients of 4): a parameter larger than that gets a bucket of its own. Statistics
  // have no gradients and are in no bucket. Throws InvalidArgument for bucket_bytes 0.
  GradientBuckets(const ParameterLayout& layout, std::size_t weight_bytes, std::size_t bucket_bytes);

  // The weights' buckets from the end of their array to its start, then the vectors' the same way.
  const std::vector<GradientBucket>& buckets() const noexcept { return buckets_; }
  // The bucket that holds `ref`'s gradient; InvalidArgument for a statistic or a parameter of no bucket.
  std::size_t bucket_of(const ParamRef& ref) const;

  // Forgets the reports of the last step.
  void start_step() noexcept;
  // Counts `ref`'s gradient as made; returns its bucket when that was the bucket's last one. Throws Error
  // when a parameter is reported twice in one step.
  std::optional<std::size_t> made(const ParamRef& ref);
  // True when every bucket of this step has completed.
  bool complete() const noexcept { return completed_ == buckets_.size(); }

 private:
  struct Member {
    ParamGroup group;
    std::size_t offset;
    std::size_t bucket;
  };
  const Member& member_of(const ParamRef& ref) const;

  std::vector<GradientBucket> buckets_;
  std::vector<Member> members_;       // sorted by (group, offset)
  std::vector<std::size_t> waiting_;  // per bucket: gradients still to come this step
  std::vector<unsigned char> seen_;   // per member: reported this step
  std::size_t completed_ = 0;
};

}  // namespace conveyor::train
