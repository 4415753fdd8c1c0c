#include "src/sources/field_kinds.h"

#include <string>

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

}  // namespace conveyor
