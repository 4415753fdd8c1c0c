#include "src/sources/field_kinds.h"

#include <memory>
#include <string>
#include <string_view>

#include "conveyor/error.h"
#include "conveyor/field_kinds.h"
#include "conveyor/fields/boxes_field.h"
#include "conveyor/fields/keypoints.h"
#include "conveyor/fields/mask_field.h"
#include "conveyor/fields/tags_field.h"
#include "src/sources/coco_keypoints.h"

namespace conveyor {
namespace detail {
namespace {

template <class T>
std::unique_ptr<Field> make() {
  return std::make_unique<T>();
}

// A constant table (no state): one line per kind. The COCO source reads the boxes itself: they decide which
// annotations it keeps.
constexpr FieldKind kKinds[] = {
    {MaskField::kName, &make<MaskField>},
    {BoxesField::kName, &make<BoxesField>},
    {TagsField::kName, &make<TagsField>},
    {KeypointsField::kName, &make<KeypointsField>, &coco_keypoints},
};

}  // namespace

std::span<const FieldKind> field_kinds() noexcept { return kKinds; }

}  // namespace detail

std::vector<std::string> field_kind_names() {
  std::vector<std::string> names;
  for (const detail::FieldKind& kind : detail::field_kinds()) names.emplace_back(kind.name);
  return names;
}

std::unique_ptr<Field> make_field(std::string_view name) {
  for (const detail::FieldKind& kind : detail::field_kinds())
    if (kind.name == name) return kind.make();
  std::string known;
  for (const detail::FieldKind& kind : detail::field_kinds())
    known += (known.empty() ? "" : ", ") + std::string(kind.name);
  throw InvalidArgument("no field kind '" + std::string(name) + "' (" + known + ")");
}

FieldSet field_set_of(const std::vector<std::string>& names) {
  FieldSet set;
  for (const std::string& name : names) {
    std::unique_ptr<Field> field = make_field(name);
    // Issue 35's three are FieldSet's flags; any other kind goes in by an empty field of it.
    if (name == MaskField::kName) {
      set.mask = true;
    } else if (name == BoxesField::kName) {
      set.boxes = true;
    } else if (name == TagsField::kName) {
      set.tags = true;
    } else {
      set.others.push_back(std::move(field));
    }
  }
  return set;
}

std::vector<std::shared_ptr<const Field>> batch_field_kinds(const FieldSet& declared, const BatchOptions& options,
                                                            const FieldList* first) {
  std::vector<std::shared_ptr<const Field>> kinds;
  const auto add = [&](std::shared_ptr<const Field> field) {
    for (const std::shared_ptr<const Field>& present : kinds)
      if (present->name() == field->name()) return;
    kinds.push_back(std::move(field));
  };
  const auto seen = [&](std::string_view name) -> const Field* {
    const Field* field = first != nullptr ? first->find(name) : nullptr;
    return field != nullptr && !field->empty() ? field : nullptr;
  };
  const auto declared_other = [&](std::string_view name) -> std::shared_ptr<const Field> {
    for (const std::shared_ptr<const Field>& field : declared.others)
      if (field->name() == name) return field;
    return nullptr;
  };
  for (const std::string& name : field_kind_names()) {
    if (const Field* field = seen(name)) {
      add(field->clone());
    } else if (std::shared_ptr<const Field> field = declared_other(name)) {
      add(std::move(field));
    } else if (std::shared_ptr<const Field> made = make_field(name);
               declared.has(name) || made->wanted_by(options)) {
      add(std::move(made));
    }
  }
  for (const std::shared_ptr<const Field>& field : declared.others) {
    const Field* sample_field = seen(field->name());
    add(sample_field != nullptr ? std::shared_ptr<const Field>(sample_field->clone()) : field);
  }
  if (first != nullptr)
    for (std::size_t i = 0; i < first->size(); ++i)
      if (!(*first)[i].empty()) add((*first)[i].clone());
  return kinds;
}

}  // namespace conveyor
