// conveyor.Batch (a host batch) and the iterators over samples and host batches.
#include <memory>
#include <string>
#include <utility>

#include "conveyor/batch.h"
#include "python/field_tensors.h"
#include "python/iterators.h"
#include "python/sample.h"
#include "python/tensor.h"

namespace conveyor::python {
namespace {

Tensor host_tensor(const std::shared_ptr<Lease<Batch>>& lease, bool labels) {
  const Batch& batch = lease->get();
  return {labels ? batch.label_tensor() : batch.pixel_tensor(), lease->item, nullptr};
}

py::tuple shape_tuple(ImageShape shape) { return py::make_tuple(shape.height, shape.width, shape.channels); }

py::list sample_infos(std::span<const SampleInfo> samples) {
  py::list out;
  for (const SampleInfo& info : samples) out.append(py::cast(info));
  return out;
}

using BatchIteration = LeasingIteration<BatchIterator, PyBatch>;

class SampleIteration {
 public:
  explicit SampleIteration(SampleIterator iterator) : iterator_(std::move(iterator)) {}

  py::object next() {
    std::optional<Sample> sample = iterator_.next();
    if (!sample) throw py::stop_iteration();
    return owned_sample(std::move(*sample));
  }
  void close() { iterator_.close(); }
  PipelineStats stats() const { return iterator_.stats(); }

 private:
  PythonIterator<SampleIterator> iterator_;
};

}  // namespace

py::object iterate_samples(const Dataset& dataset) {
  std::optional<SampleIterator> iterator;
  {
    py::gil_scoped_release released;  // begin() may run the maps (Python ones take the GIL)
    iterator.emplace(dataset.begin());
  }
  return py::cast(SampleIteration(std::move(*iterator)));
}

py::object iterate_batches(const BatchedDataset& dataset) {
  std::optional<BatchIterator> iterator;
  {
    py::gil_scoped_release released;
    iterator.emplace(dataset.begin());
  }
  return py::cast(BatchIteration(std::move(*iterator)));
}

void bind_batches(py::module_& module) {
  py::class_<PyBatch>(
      module, "Batch",
      "A batch in host memory: images (N, H, W, C) uint8 and labels (N,) int64, as Tensors (DLPack, "
      "numpy.asarray). Valid until its iterator moves on; kept Tensors keep their memory (the pool then has "
      "fewer buffers: past PipelineOptions.held_batches kept batches, the iterator raises instead of "
      "waiting).")
      .def_property_readonly(
          "images", [](const PyBatch& b) { return host_tensor(b.lease, false); },
          "The pixels, (N, H, W, C) uint8.")
      .def_property_readonly(
          "pixels", [](const PyBatch& b) { return host_tensor(b.lease, false); }, "The same as images.")
      .def_property_readonly(
          "labels", [](const PyBatch& b) { return host_tensor(b.lease, true); }, "(N,) int64.")
      .def_property_readonly(
          "samples", [](const PyBatch& b) { return sample_infos(b.lease->get().samples()); },
          "Who each sample is: a list of SampleInfo.")
      .def_property_readonly(
          "fields",
          [](const PyBatch& b) { return field_dict(b.lease->get().fields(), b.lease->item, nullptr); },
          "Every tensor of the samples' other fields by name (conveyor/fields.h), each a Tensor: \"masks\" "
          "(N, "
          "H, W), \"boxes\" (N, M, 4) padded to the batch's most (or batch(max_boxes=M)) with "
          "\"box_classes\" "
          "(-1 padding), \"box_crowd\" and \"box_counts\", \"multi_hot\" (N, K), \"keypoints\" ...; also "
          "reachable as attributes (batch.masks), which are None for a kind the batch does not carry.")
      .def("__getattr__",
           [](const PyBatch& b, const std::string& name) {
             return field_attribute(b.lease->get().fields(), name, b.lease->item, nullptr, "Batch");
           })
      .def_property_readonly("size", [](const PyBatch& b) { return b.lease->get().size(); })
      .def("__len__", [](const PyBatch& b) { return b.lease->get().size(); })
      .def_property_readonly("capacity", [](const PyBatch& b) { return b.lease->get().capacity(); })
      .def_property_readonly(
          "sample_shape", [](const PyBatch& b) { return shape_tuple(b.lease->get().sample_shape()); },
          "(H, W, C).")
      .def_property_readonly(
          "pinned", [](const PyBatch& b) { return b.lease->get().pinned(); }, "The memory is page-locked.")
      .def_property_readonly(
          "sequence", [](const PyBatch& b) { return b.lease->get().sequence(); },
          "0, 1, 2, ... in delivery order.")
      .def_property_readonly(
          "epoch", [](const PyBatch& b) { return b.lease->get().epoch(); },
          "The epoch of the batch's first sample.")
      .def_property_readonly("on_device", [](const PyBatch&) { return false; })
      .def_property_readonly("released", [](const PyBatch& b) { return !b.lease->item; })
      .def(
          "release", [](const PyBatch& b) { b.lease->item.reset(); },
          "Gives the batch back now (its kept Tensors still hold their memory).")
      .def("__repr__", [](const PyBatch& b) {
        if (!b.lease->item) return std::string("conveyor.Batch(released)");
        const Batch& batch = *b.lease->item;
        const ImageShape s = batch.sample_shape();
        return "conveyor.Batch(size=" + std::to_string(batch.size()) + ", sample_shape=(" +
               std::to_string(s.height) + ", " + std::to_string(s.width) + ", " + std::to_string(s.channels) +
               "), sequence=" + std::to_string(batch.sequence()) + ")";
      });

  bind_iteration<BatchIteration>(
      module, "BatchIterator",
      "Iterates a BatchedDataset's batches (conveyor.Batch) while its pipeline runs.");
  bind_iteration<SampleIteration>(module, "SampleIterator",
                                  "Iterates a Dataset's samples (conveyor.Sample) while its pipeline runs.");
}

}  // namespace conveyor::python
