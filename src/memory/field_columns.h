// The fields' part of one batch buffer: one FieldBatch per field kind of the pool's layout (made by the
// kinds' own make_batch), in the layout's order. What the pipeline's batch stage and its assembler work
// through; it names no kind.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/fields/field.h"
#include "conveyor/fields/field_list.h"

namespace conveyor::detail {

class FieldColumns {
 public:
  explicit FieldColumns(std::vector<std::unique_ptr<FieldBatch>> columns) : columns_(std::move(columns)) {}

  std::size_t size() const noexcept { return columns_.size(); }
  FieldBatch& operator[](std::size_t i) noexcept { return *columns_[i]; }

  // Before the ops run: each of the sample's fields that has a column may write straight into `slot`.
  void bind(FieldList& fields, std::size_t slot) noexcept;
  // The batch stage: every field of the sample into `slot`. Throws InvalidArgument when the sample has a
  // field (not empty) of a kind the batch has no column for, or when a column refuses its field.
  void take(FieldList& fields, std::size_t slot);
  // Compaction: slot `from` of every column into slot `to` of `target`'s (a buffer of the same pool).
  void move_to(std::size_t from, FieldColumns& target, std::size_t to) noexcept;
  // The batch is complete with `size` samples: every column's tensors, in order.
  void finish(std::size_t size, std::vector<BatchTensor>& out);

 private:
  std::vector<std::unique_ptr<FieldBatch>> columns_;
};

// What a sample with a field the batch has no column for is told.
[[noreturn]] void throw_field_without_column(const Field& field);

}  // namespace conveyor::detail
