// The one registration of a field kind: its name, how to make an empty one, and how COCO files carry it
// (when they do). Adding a kind is adding its line to the table in field_kinds.cpp.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "conveyor/fields/field.h"
#include "src/sources/coco_instance_reader.h"

namespace conveyor::detail {

struct FieldKind {
  std::string_view name;
  std::unique_ptr<Field> (*make)();
  CocoReaderFactory coco =
      nullptr;  // null: COCO's annotations do not carry it (or the source reads it itself)
};

// Every kind, in the order batches list their tensors.
std::span<const FieldKind> field_kinds() noexcept;

}  // namespace conveyor::detail
