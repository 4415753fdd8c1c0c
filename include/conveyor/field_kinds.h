// The field kinds conveyor knows by name (conveyor/fields/): what FieldSet's names, Python's
// Dataset.from_source(fields=[...]) and the batch attributes Python offers are resolved with. A kind of
// your own needs no entry here: a source declares it with an empty field of it in FieldSet::others, and
// batches, the device feeder and Python carry it by the names its tensors have.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/fields.h"
#include "conveyor/fields/field.h"
#include "conveyor/fields/field_list.h"

namespace conveyor {

// "mask", "boxes", "tags", ..., in the order batches list their tensors.
std::vector<std::string> field_kind_names();
// An empty field of the named kind. Throws InvalidArgument naming the known kinds for another name.
std::unique_ptr<Field> make_field(std::string_view name);
// The FieldSet of the named kinds (Python's Dataset.from_source(fields=[...])); throws as make_field.
FieldSet field_set_of(const std::vector<std::string>& names);

// The kinds a batch carries, one field of each as its prototype (its batch_bytes and make_batch lay out every
// buffer), in the order of the batch's field tensors: the kinds the source declares, those `first` has (the
// first sample through the maps; its own field: a mask's type is the first mask's), and those the batch
// options alone call for (num_classes: multi-hot rows), in the registry's order, then the source's own kinds.
// `first` is null where BatchOptions::sample_shape spares the probe: what a data service's trainer expects
// from its workers' batches is this list too.
std::vector<std::shared_ptr<const Field>> batch_field_kinds(const FieldSet& declared, const BatchOptions& options,
                                                            const FieldList* first = nullptr);

}  // namespace conveyor
