// The field kinds conveyor knows by name (conveyor/fields/): what FieldSet's names, Python's
// Dataset.from_source(fields=[...]) and the batch attributes Python offers are resolved with. A kind of
// your own needs no entry here: a source declares it with an empty field of it in FieldSet::others, and
// batches, the device feeder and Python carry it by the names its tensors have.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/fields.h"
#include "conveyor/fields/field.h"

namespace conveyor {

// "mask", "boxes", "tags", ..., in the order batches list their tensors.
std::vector<std::string> field_kind_names();
// An empty field of the named kind. Throws InvalidArgument naming the known kinds for another name.
std::unique_ptr<Field> make_field(std::string_view name);
// The FieldSet of the named kinds (Python's Dataset.from_source(fields=[...])); throws as make_field.
FieldSet field_set_of(const std::vector<std::string>& names);

}  // namespace conveyor
