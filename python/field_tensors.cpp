#include "python/field_tensors.h"

#include <algorithm>
#include <vector>

#include "conveyor/field_kinds.h"
#include "conveyor/host_memory.h"
#include "python/tensor.h"

namespace conveyor::python {
namespace {

// The tensor names batches of the known kinds have: what each kind's batch storage lays out for an empty
// batch (so the names come from the kinds themselves, never from a list here).
const std::vector<std::string>& known_tensor_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    FieldBatchLayout layout{
        .capacity = 0, .image = {1, 1, 1}, .options = {}, .memory = pageable_host_memory()};
    layout.options.num_classes = 1;  // a kind that batches only when asked for shows its tensors too
    for (const std::string& kind : field_kind_names()) {
      const std::unique_ptr<Field> field = make_field(kind);
      std::vector<std::byte> fixed(field->batch_bytes(layout));
      std::vector<BatchTensor> tensors;
      field->make_batch(layout, fixed)->finish(0, tensors);
      for (const BatchTensor& tensor : tensors) out.emplace_back(tensor.name);
    }
    return out;
  }();
  return names;
}

}  // namespace

py::dict field_dict(std::span<const BatchTensor> tensors, const std::shared_ptr<const void>& owner,
                    const std::shared_ptr<const DeviceBatch>& device_batch) {
  py::dict out;
  for (const BatchTensor& tensor : tensors)
    out[py::str(std::string(tensor.name))] = py::cast(Tensor{tensor.view, owner, device_batch});
  return out;
}

py::object field_attribute(std::span<const BatchTensor> tensors, const std::string& name,
                           const std::shared_ptr<const void>& owner,
                           const std::shared_ptr<const DeviceBatch>& device_batch, const char* type) {
  for (const BatchTensor& tensor : tensors)
    if (tensor.name == name) return py::cast(Tensor{tensor.view, owner, device_batch});
  const std::vector<std::string>& known = known_tensor_names();
  if (std::find(known.begin(), known.end(), name) != known.end()) return py::none();
  throw py::attribute_error(std::string("'conveyor.") + type + "' object has no attribute '" + name + "'");
}

}  // namespace conveyor::python
