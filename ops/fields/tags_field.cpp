#include "conveyor/fields/tags_field.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "conveyor/error.h"

namespace conveyor {
namespace {

// The multi-hot rows of one batch buffer, (capacity, K) uint8 in the buffer's own block; K = 0 (no
// BatchOptions::num_classes) keeps no rows and refuses samples with tags.
class TagsBatch final : public FieldBatch {
 public:
  TagsBatch(std::uint8_t* rows, std::size_t classes, bool pinned)
      : rows_(rows), classes_(classes), pinned_(pinned) {}

  std::string_view name() const noexcept override { return TagsField::kName; }

  void take(Field* field, std::size_t slot) override {
    static const std::vector<std::int64_t> none;
    const std::vector<std::int64_t>& tags = field ? static_cast<const TagsField*>(field)->tags : none;
    if (classes_ == 0) {
      if (!tags.empty())
        throw InvalidArgument(
            "the sample has multi-label tags but the batch has no multi-hot field: set "
            "BatchOptions::num_classes");
      return;
    }
    std::uint8_t* row = rows_ + slot * classes_;
    std::fill_n(row, classes_, std::uint8_t{0});
    for (const std::int64_t tag : tags) {
      if (tag < 0 || static_cast<std::uint64_t>(tag) >= classes_)
        throw InvalidArgument("tag " + std::to_string(tag) + " is outside 0.." +
                              std::to_string(classes_ - 1) + " (BatchOptions::num_classes)");
      row[tag] = 1;
    }
  }

  void move_to(std::size_t from, FieldBatch& target, std::size_t to) noexcept override {
    if (classes_ > 0)
      std::memcpy(static_cast<TagsBatch&>(target).rows_ + to * classes_, rows_ + from * classes_, classes_);
  }

  void copy_out(std::size_t slot, Field& field) const override {
    std::vector<std::int64_t>& tags = static_cast<TagsField&>(field).tags;
    tags.clear();
    for (std::size_t k = 0; k < classes_; ++k)
      if (rows_[slot * classes_ + k] != 0) tags.push_back(static_cast<std::int64_t>(k));
  }

  void copy_in(const Field* field, std::size_t slot) override {
    if (classes_ == 0) return;
    if (field == nullptr) {
      std::fill_n(rows_ + slot * classes_, classes_, std::uint8_t{0});
      return;
    }
    take(const_cast<Field*>(field), slot);  // writes the row, leaves the field as it was
  }

  void finish(std::size_t size, std::vector<BatchTensor>& out) override {
    if (classes_ == 0) return;
    out.push_back({.field = TagsField::kName,
                   .name = "multi_hot",
                   .view = TensorView::contiguous(
                       rows_, DType::uint8,
                       {static_cast<std::int64_t>(size), static_cast<std::int64_t>(classes_)}, -1, pinned_)});
  }

 private:
  std::uint8_t* rows_;
  std::size_t classes_;
  bool pinned_;
};

}  // namespace

std::size_t TagsField::batch_bytes(const FieldBatchLayout& layout) const {
  return layout.capacity * layout.options.num_classes;
}

std::unique_ptr<FieldBatch> TagsField::make_batch(const FieldBatchLayout& layout,
                                                  std::span<std::byte> fixed) const {
  return std::make_unique<TagsBatch>(reinterpret_cast<std::uint8_t*>(fixed.data()),
                                     layout.options.num_classes,
                                     layout.memory && layout.memory->page_locked());
}

void TagsField::tensors(std::vector<BatchTensor>& out) const {
  out.push_back({.field = kName,
                 .name = "tags",
                 .view = TensorView::contiguous(const_cast<std::int64_t*>(tags.data()), DType::int64,
                                                {static_cast<std::int64_t>(tags.size())})});
}

}  // namespace conveyor
