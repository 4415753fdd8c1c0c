// A sample's fields: what Sample::fields() returns and everything generic iterates (geometry, the batch
// stage, Python). Issue 35's three kinds (mask, boxes, tags) are kept inline, so that a sample without fields
// allocates nothing for them and Sample's old member names (encoded_mask, boxes, tags) can refer to them;
// any other kind (keypoints, a kind of your own) is added on first use by get<T>() and kept, emptied, when
// the pipeline recycles the sample, so a warm pipeline does not allocate for it either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "conveyor/fields/boxes_field.h"
#include "conveyor/fields/field.h"
#include "conveyor/fields/mask_field.h"
#include "conveyor/fields/tags_field.h"

namespace conveyor {

class FieldList {
 public:
  FieldList() = default;
  FieldList(const FieldList& other);
  FieldList& operator=(const FieldList& other);
  FieldList(FieldList&&) noexcept = default;
  FieldList& operator=(FieldList&&) noexcept = default;
  ~FieldList() = default;

  // Every field, the inline ones first, then the others in the order they were added; empty ones too.
  std::size_t size() const noexcept { return kInline + others_.size(); }
  Field& operator[](std::size_t i) noexcept { return i < kInline ? inline_field(i) : *others_[i - kInline]; }
  const Field& operator[](std::size_t i) const noexcept {
    return i < kInline ? const_cast<FieldList&>(*this).inline_field(i) : *others_[i - kInline];
  }

  // The field of kind `name`, or null.
  Field* find(std::string_view name) noexcept;
  const Field* find(std::string_view name) const noexcept;
  // The field of type T, or null.
  template <class T>
  T* find() noexcept {
    if constexpr (std::is_same_v<T, MaskField>) return &mask_;
    if constexpr (std::is_same_v<T, BoxesField>) return &boxes_;
    if constexpr (std::is_same_v<T, TagsField>) return &tags_;
    for (const std::unique_ptr<Field>& field : others_) {
      const Field& held = *field;  // not typeid(*field): clang warns of the call evaluated inside typeid
      if (typeid(held) == typeid(T)) return static_cast<T*>(field.get());
    }
    return nullptr;
  }
  template <class T>
  const T* find() const noexcept {
    return const_cast<FieldList&>(*this).find<T>();
  }
  // The field of type T, added (empty) when the sample has none yet.
  template <class T>
  T& get() {
    static_assert(std::is_base_of_v<Field, T>, "a field type derives from conveyor::Field");
    if (T* field = find<T>()) return *field;
    others_.push_back(std::make_unique<T>());
    return static_cast<T&>(*others_.back());
  }
  // A copy of `field` as this sample's field of its kind (replacing one there).
  void put(const Field& field);

  // Whether any field has content (then a batched sample goes through the batch stage).
  bool any() const noexcept;
  // Empties every field, keeping them and their allocations.
  void clear() noexcept;

  // For ops::apply_geometry: the per-instance drop marks of one change (kept for the next, no allocation).
  std::vector<std::uint8_t>& dropped_scratch() noexcept { return dropped_; }

  MaskField& mask() noexcept { return mask_; }
  BoxesField& boxes() noexcept { return boxes_; }
  TagsField& tags() noexcept { return tags_; }
  const MaskField& mask() const noexcept { return mask_; }
  const BoxesField& boxes() const noexcept { return boxes_; }
  const TagsField& tags() const noexcept { return tags_; }

 private:
  static constexpr std::size_t kInline = 3;
  Field& inline_field(std::size_t i) noexcept {
    if (i == 0) return mask_;
    if (i == 1) return boxes_;
    return tags_;
  }

  MaskField mask_;
  BoxesField boxes_;
  TagsField tags_;
  std::vector<std::unique_ptr<Field>> others_;
  std::vector<std::uint8_t> dropped_;
};

}  // namespace conveyor
