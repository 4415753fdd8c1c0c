// conveyor.DeviceFeeder, conveyor.DeviceBatch, conveyor.Placement and the iterator of a dataset's batches
// staged through a feeder (conveyor/cuda/device_feeder.h).
#include "python/device.h"

#include <any>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "conveyor/cuda/device.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/version.h"
#include "python/choices.h"
#include "python/field_tensors.h"
#include "python/iterators.h"
#include "python/tensor.h"
#if CONVEYOR_BUILT_WITH_CUDA
#include "conveyor/cuda/stream.h"
#endif

namespace conveyor::python {
namespace {

constexpr Choice<ops::ElementType> kElementTypes[] = {{"float32", ops::ElementType::float32},
                                                      {"float16", ops::ElementType::float16},
                                                      {"bfloat16", ops::ElementType::bfloat16}};
constexpr Choice<ops::TensorLayout> kLayouts[] = {{"NCHW", ops::TensorLayout::chw},
                                                  {"NHWC", ops::TensorLayout::hwc}};

// torch's spelling ("cuda:0") and conveyor's ("gpu:0") both work; str() lets torch.device objects in too.
DeviceSpec device_spec(const py::object& device) {
  std::string text = py::str(device);
  if (text == "cuda" || text.rfind("cuda:", 0) == 0) text = "gpu" + text.substr(4);
  try {
    return DeviceSpec::parse(text);
  } catch (const InvalidArgument&) {
    throw InvalidArgument(
        "device must be \"auto\", \"cpu\", \"cuda\" or \"cuda:N\" (or \"gpu\", \"gpu:N\"); got \"" +
        std::string(py::str(device)) + "\"");
  }
}

// Resolving the placement and making the feeder start CUDA (a context, streams, a thread) can take a
// while and needs no Python.
Placement placement_of(const DeviceSpec& spec) {
  py::gil_scoped_release released;
  return resolve(spec);
}

std::shared_ptr<DeviceFeeder> make_feeder(const Placement& placement, const FeederOptions& options) {
  py::gil_scoped_release released;
  return std::make_shared<DeviceFeeder>(placement, options);
}

// 1 to 4 per-channel values: a number for every channel, or a sequence (the channels it leaves out keep
// `fill`).
std::array<float, 4> per_channel(const char* what, const py::object& values, float fill) {
  std::array<float, 4> out{fill, fill, fill, fill};
  if (values.is_none()) return out;
  if (py::isinstance<py::float_>(values) || py::isinstance<py::int_>(values)) {
    out.fill(values.cast<float>());
    return out;
  }
  const auto list = values.cast<std::vector<float>>();
  if (list.empty() || list.size() > 4)
    throw InvalidArgument(std::string(what) + " takes 1 to 4 values (one per channel), got " +
                          std::to_string(list.size()));
  std::copy(list.begin(), list.end(), out.begin());
  return out;
}

// dtype=None with neither mean nor std, or dtype="uint8": no normalized images (DeviceBatch.images is the
// uint8 NHWC pixels). Otherwise (pixel - mean) / std per channel, on the 0..255 scale of the pixels.
FeederOptions feeder_options(int depth, const py::object& dtype, const std::string& layout,
                             const py::object& mean, const py::object& std, const GpuWork& work) {
  FeederOptions options;
  options.depth = depth;
  options.decode.enabled = work.decode.value_or(false);
  if (work.share) {
    options.decode.share = *work.share;
    options.decode.adapt = false;  // a share the user set is the share
  }
  std::string type = dtype.is_none() ? "" : std::string(py::str(dtype));
  if (type.rfind("torch.", 0) == 0) type = type.substr(6);  // torch.bfloat16
  if (type == "uint8" || (type.empty() && mean.is_none() && std.is_none())) {
    if (!mean.is_none() || !std.is_none())
      throw InvalidArgument(
          "mean and std need a floating-point dtype (float32, float16 or bfloat16), not uint8");
    return options;
  }
  ops::NormalizeParams params;
  params.type = type.empty() ? ops::ElementType::float32 : parse_choice("dtype", type, kElementTypes);
  params.layout = parse_choice("layout", layout, kLayouts);
  params.mean = per_channel("mean", mean, 0.f);
  params.std = per_channel("std", std, 1.f);
  options.normalize = params;
  return options;
}

struct PyDeviceBatch {
  std::shared_ptr<Lease<DeviceBatch>> lease;
};

enum class Part { images, pixels, labels };

Tensor batch_tensor(const PyDeviceBatch& handle, Part part) {
  const DeviceBatch& batch = handle.lease->get();
  TensorView view = part == Part::labels ? batch.labels() : batch.pixels();
  if (part == Part::images && batch.images()) view = batch.images();
  const std::shared_ptr<const DeviceBatch> owner = handle.lease->item;
  return {view, owner, batch.on_device() ? owner : nullptr};
}

// The device batch's field tensors (batch.fields, batch.masks, ...), holding the batch.
py::object field_tensors(const PyDeviceBatch& handle, const std::string* name) {
  const DeviceBatch& batch = handle.lease->get();
  const std::shared_ptr<const DeviceBatch> owner = handle.lease->item;
  const std::shared_ptr<const DeviceBatch> device_batch = batch.on_device() ? owner : nullptr;
  if (name == nullptr) return field_dict(batch.fields(), owner, device_batch);
  return field_attribute(batch.fields(), *name, owner, device_batch, "DeviceBatch");
}

std::string device_name(int device) { return device >= 0 ? "cuda:" + std::to_string(device) : "cpu"; }

using DeviceIteration = LeasingIteration<DeviceBatchIterator, PyDeviceBatch, std::shared_ptr<DeviceFeeder>>;

py::object feed(const std::shared_ptr<DeviceFeeder>& feeder, const BatchedDataset& dataset) {
  std::optional<DeviceBatchIterator> iterator;
  {
    py::gil_scoped_release released;  // begin() may run the maps (Python ones take the GIL)
    iterator.emplace(feeder->feed(dataset));
  }
  return py::cast(DeviceIteration(std::move(*iterator), feeder));
}

// A host batch staged by hand: the feeder takes it over, so none of its tensors may be alive.
PyDeviceBatch stage(DeviceFeeder& feeder, const PyBatch& handle) {
  Batch& batch = handle.lease->get();
  if (handle.lease->item.use_count() != 1)
    throw Error(
        "DeviceFeeder.stage: tensors of this batch are still alive; the feeder takes the batch over, so let "
        "them go first (or stage the dataset with feed())");
  Batch taken = std::move(batch);
  handle.lease->item.reset();
  auto lease = std::make_shared<Lease<DeviceBatch>>();
  {
    py::gil_scoped_release released;
    lease->item = std::make_shared<DeviceBatch>(feeder.stage(std::move(taken)));
  }
  return PyDeviceBatch{lease};
}

constexpr const char* kNormalizeDoc =
    "dtype \"float32\", \"float16\" or \"bfloat16\" (torch dtypes too), or given mean/std: the feeder also "
    "makes the model's input, (pixel - mean) / std per channel in `layout` (\"NCHW\" or \"NHWC\"), on the "
    "GPU (on the CPU for device=\"cpu\"); mean and std are on the 0..255 scale of the pixels (ImageNet's: "
    "mean=[123.675, 116.28, 103.53], std=[58.395, 57.12, 57.375]), a number or 1 to 4 values. dtype None "
    "(or \"uint8\") without mean and std: images are the uint8 NHWC pixels. depth: ring slots (1 to 8), "
    "that is batches on their way or held at once.";

constexpr const char* kGpuDecodeDoc =
    "gpu_decode (off unless asked for here; BatchedDataset.to_device turns it on by itself): on a GPU whose "
    "machine has nvJPEG, a dataset whose chain ends in decode_random_resized_crop leaves a share of its "
    "images to the GPU's JPEG decoder (its hardware engines where it has them): the pipeline's threads "
    "read only their headers and draw the crop windows, "
    "the feeder decodes them into the batch; images nvJPEG refuses are decoded on the CPU and counted "
    "(feeder_stats()). gpu_share: that share, 0 to 1; by default 0.5, moved batch by batch to where neither "
    "side waits when the pipeline is not deterministic (a share given here stays). With deterministic=True "
    "the split is a fixed function of each sample's index: the same batches at any thread count. "
    "GPU-decoded pixels differ from the CPU decoder's by a few levels (another IDCT and resize).";

void bind_placement(py::module_& module) {
  py::class_<Placement>(module, "Placement", "Where a feeder puts its batches, and why.")
      .def_readonly("gpu", &Placement::gpu)
      .def_readonly("device", &Placement::device, "CUDA runtime index when gpu, else -1.")
      .def_readonly("description", &Placement::description)
      .def_readonly("reason", &Placement::reason)
      .def("__repr__", [](const Placement& p) { return "conveyor.Placement('" + p.description + "')"; });
}

void bind_device_batch(py::module_& module) {
  py::class_<PyDeviceBatch>(
      module, "DeviceBatch",
      "A batch where its consumer reads it (GPU memory, or host memory for device=\"cpu\"). Valid until its "
      "iterator moves on; a kept Tensor (or a tensor made from it) keeps its ring slot held, and a feeder "
      "whose every slot is held raises rather than overwrite one.")
      .def_property_readonly(
          "images", [](const PyDeviceBatch& b) { return batch_tensor(b, Part::images); },
          "The normalized images when the feeder makes them ((N, C, H, W) or (N, H, W, C) in dtype), else "
          "the uint8 pixels (N, H, W, C).")
      .def_property_readonly(
          "pixels", [](const PyDeviceBatch& b) { return batch_tensor(b, Part::pixels); },
          "(N, H, W, C) uint8 as the pipeline made them.")
      .def_property_readonly(
          "labels", [](const PyDeviceBatch& b) { return batch_tensor(b, Part::labels); }, "(N,) int64.")
      .def_property_readonly(
          "fields", [](const PyDeviceBatch& b) { return field_tensors(b, nullptr); },
          "The samples' other fields by name, where the batch is (as Batch.fields); also attributes "
          "(batch.masks, batch.boxes, ...), None for a kind the batch does not carry.")
      .def("__getattr__",
           [](const PyDeviceBatch& b, const std::string& name) { return field_tensors(b, &name); })
      .def_property_readonly("normalized",
                             [](const PyDeviceBatch& b) { return bool(b.lease->get().images()); })
      .def_property_readonly(
          "augmented", [](const PyDeviceBatch& b) { return b.lease->get().images_augmented(); },
          "Whether the feeder ran flip and distort into images (to_device moved them off the chain).")
      .def_property_readonly(
          "samples",
          [](const PyDeviceBatch& b) {
            py::list out;
            for (const SampleInfo& info : b.lease->get().samples()) out.append(py::cast(info));
            return out;
          },
          "Who each sample is: a list of SampleInfo.")
      .def_property_readonly("size", [](const PyDeviceBatch& b) { return b.lease->get().size(); })
      .def("__len__", [](const PyDeviceBatch& b) { return b.lease->get().size(); })
      .def_property_readonly("sample_shape",
                             [](const PyDeviceBatch& b) {
                               const ImageShape s = b.lease->get().sample_shape();
                               return py::make_tuple(s.height, s.width, s.channels);
                             })
      .def_property_readonly("on_device", [](const PyDeviceBatch& b) { return b.lease->get().on_device(); })
      .def_property_readonly(
          "device", [](const PyDeviceBatch& b) { return device_name(b.lease->get().device()); },
          "\"cuda:N\", or \"cpu\".")
      .def_property_readonly("sequence", [](const PyDeviceBatch& b) { return b.lease->get().sequence(); })
      .def_property_readonly("epoch", [](const PyDeviceBatch& b) { return b.lease->get().epoch(); })
      .def_property_readonly("released", [](const PyDeviceBatch& b) { return !b.lease->item; })
      .def(
          "release", [](const PyDeviceBatch& b) { b.lease->item.reset(); },
          "Gives the batch back now (its kept Tensors still hold it).")
      .def("__repr__", [](const PyDeviceBatch& b) {
        if (!b.lease->item) return std::string("conveyor.DeviceBatch(released)");
        const DeviceBatch& batch = *b.lease->item;
        return "conveyor.DeviceBatch(size=" + std::to_string(batch.size()) +
               ", device=" + device_name(batch.device()) + ", sequence=" + std::to_string(batch.sequence()) +
               ")";
      });
}

void bind_feeder(py::module_& module) {
  py::class_<DeviceFeeder, std::shared_ptr<DeviceFeeder>> feeder(
      module, "DeviceFeeder",
      "Moves ready batches to where the training step reads them: on a GPU, copied on the feeder's own "
      "stream into a ring of `depth` device buffers (normalized there when asked) and made ready on its "
      "consumer stream; on the CPU, viewed in place.");
  feeder
      .def(py::init([](const py::object& device, int depth, const py::object& dtype,
                       const std::string& layout, const py::object& mean, const py::object& std,
                       bool gpu_decode, std::optional<double> gpu_share) {
             return make_feeder(placement_of(device_spec(device)),
                                feeder_options(depth, dtype, layout, mean, std,
                                               {.augment = false, .decode = gpu_decode, .share = gpu_share}));
           }),
           py::arg("device") = "auto", py::kw_only(), py::arg("depth") = 3, py::arg("dtype") = py::none(),
           py::arg("layout") = "NCHW", py::arg("mean") = py::none(), py::arg("std") = py::none(),
           py::arg("gpu_decode") = false, py::arg("gpu_share") = py::none(),
           (std::string("device: \"auto\" (GPU 0 when there is one), \"cpu\", \"cuda\", \"cuda:N\". ") +
            kNormalizeDoc + " " + kGpuDecodeDoc)
               .c_str())
      .def("feed", &feed, py::arg("dataset"),
           "Iterates the dataset's batches through this feeder (page-locked host buffers for a GPU, room in "
           "the pipeline for the batches the feeder holds): yields DeviceBatch.")
      .def("stage", &stage, py::arg("batch"),
           "Starts moving one host Batch (none of whose tensors may be alive) and returns its DeviceBatch.")
      .def(
          "synchronize",
          [](DeviceFeeder& self) {
            py::gil_scoped_release released;
            self.synchronize();
          },
          "Waits until every copy has finished and every host batch has been given back.")
      .def("stats", &DeviceFeeder::stats)
      .def_property_readonly("placement", &DeviceFeeder::placement)
      .def_property_readonly("depth", &DeviceFeeder::depth);
#if CONVEYOR_BUILT_WITH_CUDA
  feeder
      .def_property_readonly(
          "consumer_stream",
          [](const DeviceFeeder& self) {
            return reinterpret_cast<std::uintptr_t>(cuda::consumer_stream(self));
          },
          "The cudaStream_t (as an int) each batch is made ready on, e.g. for torch.cuda.ExternalStream.")
      .def(
          "set_consumer_stream",
          [](DeviceFeeder& self, std::uintptr_t stream) {
            cuda::set_consumer_stream(self, reinterpret_cast<cudaStream_t>(stream));
          },
          py::arg("stream"),
          "Makes `stream` (a cudaStream_t as an int, e.g. torch.cuda.current_stream().cuda_stream; 0: the "
          "feeder's own again) the stream batches staged from now on are made ready on. Only while no batch "
          "is held.");
#endif
}

}  // namespace

py::object to_device(const BatchedDataset& dataset, const py::object& device, const py::object& dtype,
                     const std::string& layout, const py::object& mean, const py::object& std,
                     std::optional<int> depth, const GpuWork& work) {
  const Placement placement = placement_of(device_spec(device));
  FeederOptions options = feeder_options(depth.value_or(3), dtype, layout, mean, std, work);
  // The chain's trailing flip and distort join normalize on the GPU (their twins); decode_random_resized_crop
  // is then the last map, whose twin lets it defer images to the feeder's decoder.
  const BatchedDataset placed = work.augment ? place_pixel_ops(dataset, placement, options) : dataset;
  if (!work.decode)
    options.decode.enabled = placement.gpu && options.depth >= 2 && may_defer_to_gpu(placed, options);
  // With decoding on the GPU the feeder stages batches ahead on its own thread. A Python loop still holds
  // the last batch's tensors when it asks for the next one: one slot for that, one for the batch it
  // trains on, two staged ahead.
  if (!depth && options.decode.enabled) options.depth = 4;
  return feed(make_feeder(placement, options), placed);
}

void bind_device(py::module_& module) {
  bind_placement(module);
  bind_device_batch(module);
  bind_feeder(module);
  bind_iteration<DeviceIteration>(
      module, "DeviceBatchIterator",
      "Iterates a dataset's batches staged by a DeviceFeeder (conveyor.DeviceBatch).")
      .def(
          "feeder_stats", [](const DeviceIteration& self) { return self.kept()->stats(); },
          "The feeder's counts so far (FeederStats).")
      .def_property_readonly("feeder", &DeviceIteration::kept);
}

}  // namespace conveyor::python
