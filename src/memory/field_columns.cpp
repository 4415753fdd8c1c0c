#include "src/memory/field_columns.h"

#include <string>

#include "conveyor/error.h"

namespace conveyor::detail {

void FieldColumns::bind(FieldList& fields, std::size_t slot) noexcept {
  for (const std::unique_ptr<FieldBatch>& column : columns_)
    if (Field* field = fields.find(column->name())) column->bind(*field, slot);
}

void FieldColumns::take(FieldList& fields, std::size_t slot) {
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const Field& field = fields[i];
    if (field.empty()) continue;
    bool placed = false;
    for (const std::unique_ptr<FieldBatch>& column : columns_)
      placed = placed || column->name() == field.name();
    if (!placed) throw_field_without_column(field);
  }
  for (const std::unique_ptr<FieldBatch>& column : columns_) column->take(fields.find(column->name()), slot);
}

void FieldColumns::move_to(std::size_t from, FieldColumns& target, std::size_t to) noexcept {
  for (std::size_t k = 0; k < columns_.size(); ++k) columns_[k]->move_to(from, *target.columns_[k], to);
}

void FieldColumns::finish(std::size_t size, std::vector<BatchTensor>& out) {
  for (const std::unique_ptr<FieldBatch>& column : columns_) column->finish(size, out);
}

void throw_field_without_column(const Field& field) {
  throw InvalidArgument("the sample has a field '" + std::string(field.name()) +
                        "' but the batch has none (its source gives none, and neither did its first sample)");
}

}  // namespace conveyor::detail
