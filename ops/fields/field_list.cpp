#include "conveyor/fields/field_list.h"

#include <algorithm>
#include <string>

#include "conveyor/fields.h"

namespace conveyor {

FieldList::FieldList(const FieldList& other)
    : mask_(other.mask_), boxes_(other.boxes_), tags_(other.tags_), dropped_(other.dropped_) {
  others_.reserve(other.others_.size());
  for (const std::unique_ptr<Field>& field : other.others_) others_.push_back(field->clone());
}

FieldList& FieldList::operator=(const FieldList& other) {
  if (this != &other) *this = FieldList(other);
  return *this;
}

Field* FieldList::find(std::string_view name) noexcept {
  for (std::size_t i = 0; i < size(); ++i)
    if ((*this)[i].name() == name) return &(*this)[i];
  return nullptr;
}

const Field* FieldList::find(std::string_view name) const noexcept {
  return const_cast<FieldList&>(*this).find(name);
}

void FieldList::put(const Field& field) {
  if (const auto* mask = dynamic_cast<const MaskField*>(&field)) {
    mask_ = *mask;
    return;
  }
  if (const auto* boxes = dynamic_cast<const BoxesField*>(&field)) {
    boxes_ = *boxes;
    return;
  }
  if (const auto* tags = dynamic_cast<const TagsField*>(&field)) {
    tags_ = *tags;
    return;
  }
  for (std::unique_ptr<Field>& mine : others_)
    if (mine->name() == field.name()) {
      mine = field.clone();
      return;
    }
  others_.push_back(field.clone());
}

bool FieldList::any() const noexcept {
  for (std::size_t i = 0; i < size(); ++i)
    if (!(*this)[i].empty()) return true;
  return false;
}

void FieldList::clear() noexcept {
  for (std::size_t i = 0; i < size(); ++i) (*this)[i].clear();
}

std::vector<std::string> FieldSet::names() const {
  std::vector<std::string> out;
  if (mask) out.emplace_back(MaskField::kName);
  if (boxes) out.emplace_back(BoxesField::kName);
  if (tags) out.emplace_back(TagsField::kName);
  for (const std::shared_ptr<const Field>& field : others)
    if (field) out.emplace_back(field->name());
  return out;
}

bool FieldSet::follows_geometry() const noexcept {
  if (mask || boxes) return true;  // issue 35's flags: a mask and boxes move with the image, tags do not
  for (const std::shared_ptr<const Field>& field : others)
    if (field && field->follows_geometry()) return true;
  return false;
}

bool FieldSet::has(std::string_view name) const {
  const std::vector<std::string> all = names();
  return std::find(all.begin(), all.end(), name) != all.end();
}

}  // namespace conveyor
