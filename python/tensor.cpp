#include "python/tensor.h"

#include <dlpack/dlpack.h>

#include <cstdint>
#include <string>

#include "conveyor/dlpack.h"
#include "conveyor/error.h"
#include "conveyor/version.h"
#if CONVEYOR_BUILT_WITH_CUDA
#include "conveyor/cuda/stream.h"
#endif

namespace conveyor::python {
namespace {

// The capsule's destructor: a capsule no consumer took (its name is still "dltensor") owns the tensor.
// It runs during garbage collection, so it must leave any pending Python error alone.
void delete_unconsumed(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;  // renamed "used_dltensor": the consumer owns it
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
  PyErr_Restore(type, value, traceback);
}

py::capsule to_capsule(DLManagedTensor* managed) {
  PyObject* capsule = PyCapsule_New(managed, "dltensor", &delete_unconsumed);
  if (capsule == nullptr) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

py::tuple dlpack_device(const Tensor& tensor) {
  if (tensor.view.on_device()) return py::make_tuple(static_cast<int>(kDLCUDA), tensor.view.device);
  return py::make_tuple(static_cast<int>(kDLCPU), 0);
}

std::string device_name(const TensorView& view) {
  return view.on_device() ? "cuda:" + std::to_string(view.device) : "cpu";
}

// The consumer's stream, as the DLPack protocol encodes it for CUDA: None or 1 the legacy default
// stream, 2 the per-thread default stream, -1 "do not synchronize", anything else a cudaStream_t.
void make_reader(const Tensor& tensor, const py::object& stream) {
  const long long code = stream.is_none() ? 1 : stream.cast<long long>();
  if (code == -1) return;  // the consumer synchronizes itself
  if (code == 0)
    throw InvalidArgument(
        "__dlpack__: stream=0 is ambiguous in the DLPack protocol; pass 1 for the legacy default stream, 2 "
        "for the per-thread default stream, or the stream's handle");
#if CONVEYOR_BUILT_WITH_CUDA
  cudaStream_t handle = code == 1   ? cudaStreamLegacy
                        : code == 2 ? cudaStreamPerThread
                                    : reinterpret_cast<cudaStream_t>(static_cast<std::uintptr_t>(code));
  // The stream waits for the batch now, and the batch's ring slot is not reused before that stream has
  // passed the point where the batch is released.
  cuda::read_on(*tensor.device_batch, handle);
#else
  (void)tensor;
  throw DeviceError("__dlpack__: a tensor on a GPU in a build of conveyor without CUDA");
#endif
}

py::capsule export_dlpack(const Tensor& tensor, const py::object& stream, const py::object& max_version,
                          const py::object& dl_device, const py::object& copy) {
  (void)max_version;  // always the unversioned DLPack 0.x capsule, which every consumer still takes
  if (!copy.is_none() && copy.cast<bool>())
    throw py::buffer_error(
        "conveyor.Tensor.__dlpack__: copy=True is not supported; conveyor exports its memory without "
        "copying (copy the consumer's tensor instead)");
  if (!dl_device.is_none() && !dl_device.equal(dlpack_device(tensor)))
    throw py::buffer_error(
        "conveyor.Tensor.__dlpack__: the tensor is on " + device_name(tensor.view) +
        "; it cannot be exported to another device (dl_device=" + std::string(py::repr(dl_device)) + ")");
  if (tensor.view.on_device()) {
    make_reader(tensor, stream);
  } else if (!stream.is_none() && stream.cast<long long>() != -1) {
    throw py::buffer_error("conveyor.Tensor.__dlpack__: a tensor in host memory takes no stream (got " +
                           std::string(py::repr(stream)) + ")");
  }
  return to_capsule(to_dlpack(tensor.view, tensor.owner));
}

// numpy's array interface (version 3) for host memory: numpy.asarray(tensor) views it without a copy and
// keeps the Tensor (and so the memory) as the array's base. (Not the buffer protocol: pybind11 2.10 cannot
// raise from a buffer getter, and bfloat16 or device memory must raise.)
py::dict array_interface(const Tensor& tensor) {
  const TensorView& view = tensor.view;
  if (view.on_device())
    throw py::buffer_error("conveyor.Tensor: memory on " + device_name(view) +
                           " cannot be viewed by numpy; use torch.from_dlpack (or another DLPack consumer)");
  const char* type = nullptr;
  switch (view.dtype) {
    case DType::uint8:
      type = "|u1";
      break;
    case DType::int64:
      type = "<i8";
      break;
    case DType::float32:
      type = "<f4";
      break;
    case DType::float16:
      type = "<f2";
      break;
    case DType::uint16:
      type = "<u2";
      break;
    case DType::bfloat16:
      throw py::buffer_error(
          "conveyor.Tensor: numpy has no bfloat16; use a DLPack consumer that knows it (torch.from_dlpack)");
  }
  const auto item = static_cast<std::int64_t>(dtype_size(view.dtype));
  py::tuple shape(static_cast<std::size_t>(view.ndim)), strides(static_cast<std::size_t>(view.ndim));
  for (int d = 0; d < view.ndim; ++d) {
    const auto i = static_cast<std::size_t>(d);
    shape[i] = view.shape[i];
    strides[i] = view.strides[i] * item;
  }
  py::dict out;
  out["version"] = 3;
  out["typestr"] = type;
  out["shape"] = shape;
  out["strides"] = strides;
  out["data"] = py::make_tuple(reinterpret_cast<std::uintptr_t>(view.data), false);
  return out;
}

py::tuple to_tuple(const std::array<std::int64_t, TensorView::kMaxDims>& values, int count) {
  py::tuple out(static_cast<std::size_t>(count));
  for (int d = 0; d < count; ++d) out[static_cast<std::size_t>(d)] = values[static_cast<std::size_t>(d)];
  return out;
}

}  // namespace

void bind_tensor(py::module_& module) {
  py::class_<Tensor>(
      module, "Tensor",
      "One tensor of a batch, without a copy: torch.from_dlpack(t), numpy.from_dlpack(t) (host memory), or "
      "numpy.asarray(t) (host memory, through __array_interface__). Keeps its batch's memory from being "
      "reused while it, or a tensor made from it, lives.")
      .def(
          "__dlpack__",
          [](const Tensor& self, const py::object& stream, const py::object& max_version,
             const py::object& dl_device,
             const py::object& copy) { return export_dlpack(self, stream, max_version, dl_device, copy); },
          py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
          py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
          "A DLPack capsule viewing this tensor (DLPack's Python protocol). For memory on a GPU, `stream` "
          "is the consumer's CUDA stream (None or 1: the legacy default stream, 2: the per-thread default "
          "stream, -1: no synchronization, else a cudaStream_t as an int): it waits for the batch's data, "
          "and the batch's memory is not reused before it has passed the point where the batch is released.")
      .def("__dlpack_device__", &dlpack_device, "(device type, device index) as DLPack numbers them.")
      .def_property_readonly(
          "__array_interface__", &array_interface,
          "numpy's view of host memory (numpy.asarray(tensor)); raises BufferError for device memory and "
          "bfloat16.")
      .def_property_readonly("shape",
                             [](const Tensor& self) { return to_tuple(self.view.shape, self.view.ndim); })
      .def_property_readonly(
          "strides", [](const Tensor& self) { return to_tuple(self.view.strides, self.view.ndim); },
          "In elements, not bytes.")
      .def_property_readonly("ndim", [](const Tensor& self) { return self.view.ndim; })
      .def_property_readonly(
          "dtype", [](const Tensor& self) { return std::string(to_string(self.view.dtype)); },
          "\"uint8\", \"uint16\", \"int64\", \"float32\", \"float16\" or \"bfloat16\".")
      .def_property_readonly(
          "device", [](const Tensor& self) { return device_name(self.view); },
          "\"cpu\" (host memory, page-locked or not) or \"cuda:N\".")
      .def_property_readonly(
          "pinned", [](const Tensor& self) { return self.view.pinned; }, "Host memory that is page-locked.")
      .def_property_readonly(
          "data_ptr", [](const Tensor& self) { return reinterpret_cast<std::uintptr_t>(self.view.data); },
          "The address of the first element.")
      .def("__len__", [](const Tensor& self) { return self.view.ndim > 0 ? self.view.shape[0] : 0; })
      .def("__repr__", [](const Tensor& self) {
        std::string shape;
        for (int d = 0; d < self.view.ndim; ++d)
          shape += (d ? ", " : "") + std::to_string(self.view.shape[static_cast<std::size_t>(d)]);
        if (self.view.ndim == 1) shape += ",";
        return "conveyor.Tensor(shape=(" + shape + "), dtype=" + to_string(self.view.dtype) +
               ", device=" + device_name(self.view) + ")";
      });
}

}  // namespace conveyor::python
