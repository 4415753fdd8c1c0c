#include "src/train/distributed/gradient_buckets.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "conveyor/error.h"

namespace conveyor::train {

GradientBuckets::GradientBuckets(const ParameterLayout& layout, std::size_t weight_bytes,
                                 std::size_t bucket_bytes) {
  if (bucket_bytes == 0) throw InvalidArgument("gradient buckets: bucket_bytes must be positive");
  for (const ParamGroup group : {ParamGroup::weights, ParamGroup::vectors}) {
    std::vector<const ParamEntry*> entries;
    for (const ParamEntry& e : layout.entries())
      if (e.ref.group == group) entries.push_back(&e);
    // Declaration order is offset order; walk it backwards (the order gradients are made in).
    std::sort(entries.begin(), entries.end(),
              [](const ParamEntry* a, const ParamEntry* b) { return a->ref.offset > b->ref.offset; });
    const std::size_t element_bytes = group == ParamGroup::weights ? weight_bytes : sizeof(float);
    std::size_t end = layout.size(group);  // the open bucket's end: the previous bucket's begin
    GradientBucket open{group, end, end, 0};
    for (const ParamEntry* e : entries) {
      const std::size_t grown = (end - e->ref.offset) * element_bytes;
      if (open.parameters > 0 && grown > bucket_bytes) {
        buckets_.push_back(open);
        end = open.begin;
        open = GradientBucket{group, end, end, 0};
      }
      open.begin = e->ref.offset;
      ++open.parameters;
      members_.push_back({group, e->ref.offset, buckets_.size()});
    }
    if (open.parameters > 0) {
      open.begin = 0;  // the array's start (alignment never leaves a gap before the first tensor)
      buckets_.push_back(open);
    }
  }
  std::sort(members_.begin(), members_.end(), [](const Member& a, const Member& b) {
    return std::tie(a.group, a.offset) < std::tie(b.group, b.offset);
  });
  waiting_.assign(buckets_.size(), 0);
  seen_.assign(members_.size(), 0);
  start_step();
}

const GradientBuckets::Member& GradientBuckets::member_of(const ParamRef& ref) const {
  const auto it =
      std::lower_bound(members_.begin(), members_.end(), ref, [](const Member& m, const ParamRef& r) {
        return std::tie(m.group, m.offset) < std::tie(r.group, r.offset);
      });
  if (it == members_.end() || it->group != ref.group || it->offset != ref.offset)
    throw InvalidArgument("gradient buckets: no bucket holds the parameter at offset " +
                          std::to_string(ref.offset) + " of group " +
                          std::to_string(static_cast<int>(ref.group)));
  return *it;
}

std::size_t GradientBuckets::bucket_of(const ParamRef& ref) const { return member_of(ref).bucket; }

void GradientBuckets::start_step() noexcept {
  for (std::size_t b = 0; b < buckets_.size(); ++b) waiting_[b] = buckets_[b].parameters;
  std::fill(seen_.begin(), seen_.end(), 0);
  completed_ = 0;
}

std::optional<std::size_t> GradientBuckets::made(const ParamRef& ref) {
  const Member& member = member_of(ref);
  unsigned char& seen = seen_[static_cast<std::size_t>(&member - members_.data())];
  if (seen)
    throw Error("gradient buckets: the gradient at offset " + std::to_string(ref.offset) +
                " was reported twice in one step");
  seen = 1;
  if (--waiting_[member.bucket] > 0) return std::nullopt;
  ++completed_;
  return member.bucket;
}

}  // namespace conveyor::train
