#include "python/sample.h"

#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/error.h"

namespace conveyor::python {
namespace {

// A conveyor.Sample: either owns its element (iteration) or borrows one for the length of a Python map's
// or filter's call; after the call it is expired and every access raises, so a callable that kept it
// cannot reach memory the pipeline has reused.
class PySample {
 public:
  explicit PySample(std::shared_ptr<Sample> owned) : owned_(std::move(owned)), sample_(owned_.get()) {}
  PySample(Sample& borrowed, bool writable) : sample_(&borrowed), writable_(writable) {}

  const Sample& get() const {
    if (sample_ == nullptr)
      throw Error(
          "conveyor.Sample: this sample was handed to a map or filter and is gone now that the call "
          "returned; copy what you need (sample.image, sample.encoded are copies) during the call");
    return *sample_;
  }
  Sample& get_writable() const {
    get();
    if (!writable_) throw InvalidArgument("conveyor.Sample: a filter sees the sample read-only");
    return *sample_;
  }
  void expire() noexcept { sample_ = nullptr; }

 private:
  std::shared_ptr<Sample> owned_;
  Sample* sample_ = nullptr;
  bool writable_ = true;
};

// The current pixels as a new (H, W, C) uint8 memoryview over a bytearray it owns: a copy, so that
// nothing in Python ever points into the pipeline's reused buffers.
py::object image_copy(const Sample& sample) {
  const ConstImageView image = sample.image();
  if (image.empty()) return py::none();
  const std::size_t row = static_cast<std::size_t>(image.width) * static_cast<std::size_t>(image.channels);
  const auto bytes = static_cast<py::ssize_t>(row * static_cast<std::size_t>(image.height));
  PyObject* array = PyByteArray_FromStringAndSize(nullptr, bytes);
  if (array == nullptr) throw py::error_already_set();
  const py::object owner = py::reinterpret_steal<py::object>(array);
  char* out = PyByteArray_AsString(array);
  for (int y = 0; y < image.height; ++y)
    std::memcpy(out + static_cast<std::size_t>(y) * row, image.row(y), row);
  return py::memoryview(owner).attr("cast")("B", py::make_tuple(image.height, image.width, image.channels));
}

// Copies a (H, W) or (H, W, C) uint8 buffer (any strides: numpy arrays, memoryviews) into the sample as
// its current image, through Sample::output, so a last op written in Python still fills the batch slot.
void set_image(Sample& sample, const py::buffer& pixels) {
  const py::buffer_info info = pixels.request();
  if (info.itemsize != 1 || info.format != "B" || (info.ndim != 2 && info.ndim != 3))
    throw InvalidArgument(
        "conveyor.Sample.image takes uint8 pixels of shape (H, W) or (H, W, C); got format '" + info.format +
        "' with " + std::to_string(info.ndim) + " dimensions");
  const ImageShape shape{static_cast<int>(info.shape[0]), static_cast<int>(info.shape[1]),
                         info.ndim == 3 ? static_cast<int>(info.shape[2]) : 1};
  if (shape.empty() || shape.channels > 4)
    throw InvalidArgument("conveyor.Sample.image: an image needs pixels and 1 to 4 channels");
  const py::ssize_t step_y = info.strides[0], step_x = info.strides[1];
  const py::ssize_t step_c = info.ndim == 3 ? info.strides[2] : 1;
  const auto* in = static_cast<const std::uint8_t*>(info.ptr);
  const ImageView out = sample.output(shape);
  const bool rows_contiguous = step_c == 1 && step_x == shape.channels;
  for (int y = 0; y < shape.height; ++y) {
    const std::uint8_t* src = in + y * step_y;
    std::uint8_t* dst = out.row(y);
    if (rows_contiguous) {
      std::memcpy(dst, src, static_cast<std::size_t>(shape.width) * static_cast<std::size_t>(shape.channels));
      continue;
    }
    for (int x = 0; x < shape.width; ++x)
      for (int c = 0; c < shape.channels; ++c) *dst++ = src[x * step_x + c * step_c];
  }
  sample.publish();
}

// The current mask as a new (H, W) uint8 or uint16 memoryview (a copy), or None.
py::object mask_copy(const Sample& sample) {
  const ConstMaskView mask = sample.mask();
  if (mask.empty()) return py::none();
  const std::size_t row = static_cast<std::size_t>(mask.width) * mask.element_size();
  PyObject* array = PyByteArray_FromStringAndSize(nullptr, static_cast<py::ssize_t>(row * mask.height));
  if (array == nullptr) throw py::error_already_set();
  const py::object owner = py::reinterpret_steal<py::object>(array);
  char* out = PyByteArray_AsString(array);
  for (int y = 0; y < mask.height; ++y)
    std::memcpy(out + static_cast<std::size_t>(y) * row, mask.row(y), row);
  return py::memoryview(owner).attr("cast")(mask.type == MaskType::uint16 ? "H" : "B",
                                            py::make_tuple(mask.height, mask.width));
}

// A host tensor's elements, copied into a new memoryview of its shape (any strides), or None for no elements.
py::object tensor_copy(const TensorView& view) {
  const char* format = view.dtype == DType::uint8     ? "B"
                       : view.dtype == DType::uint16  ? "H"
                       : view.dtype == DType::int64   ? "q"
                       : view.dtype == DType::float32 ? "f"
                                                      : nullptr;
  if (format == nullptr)
    throw InvalidArgument(std::string("conveyor.Sample: no copy of ") + to_string(view.dtype));
  const std::size_t element = dtype_size(view.dtype);
  PyObject* array = PyByteArray_FromStringAndSize(nullptr, static_cast<py::ssize_t>(view.bytes()));
  if (array == nullptr) throw py::error_already_set();
  const py::object owner = py::reinterpret_steal<py::object>(array);
  char* out = PyByteArray_AsString(array);
  py::tuple shape(view.ndim);
  for (int d = 0; d < view.ndim; ++d)
    shape[static_cast<std::size_t>(d)] = view.shape[static_cast<std::size_t>(d)];
  // Row-major walk over the view's index space.
  std::vector<std::int64_t> index(static_cast<std::size_t>(view.ndim), 0);
  for (std::size_t n = 0; n < view.elements(); ++n) {
    std::int64_t offset = 0;
    for (int d = 0; d < view.ndim; ++d)
      offset += index[static_cast<std::size_t>(d)] * view.strides[static_cast<std::size_t>(d)];
    std::memcpy(out + n * element,
                static_cast<const char*>(view.data) + offset * static_cast<std::int64_t>(element), element);
    for (int d = view.ndim - 1; d >= 0; --d) {
      if (++index[static_cast<std::size_t>(d)] < view.shape[static_cast<std::size_t>(d)]) break;
      index[static_cast<std::size_t>(d)] = 0;
    }
  }
  return py::memoryview(owner).attr("cast")(format, shape);
}

// Every field's content as tensors (copies), by name: Sample.fields and Sample.<name>.
std::vector<BatchTensor> sample_tensors(const Sample& sample) {
  std::vector<BatchTensor> tensors;
  for (std::size_t i = 0; i < sample.fields().size(); ++i)
    if (!sample.fields()[i].empty()) sample.fields()[i].tensors(tensors);
  return tensors;
}

py::list boxes_of(const BoxList& boxes) {
  py::list out;
  for (const Box& box : boxes.boxes()) out.append(py::make_tuple(box.x0, box.y0, box.x1, box.y1));
  return out;
}

// sample.boxes = [(x0, y0, x1, y1), ...] with classes (and crowd flags) of the same length.
void set_boxes(Sample& sample, const std::vector<std::array<float, 4>>& boxes,
               const std::vector<std::int64_t>& classes, const std::vector<bool>& crowd) {
  if (classes.size() != boxes.size() || (!crowd.empty() && crowd.size() != boxes.size()))
    throw InvalidArgument("conveyor.Sample.set_boxes: one class (and crowd flag, when given) per box");
  sample.boxes.clear();
  for (std::size_t i = 0; i < boxes.size(); ++i)
    sample.boxes.add({boxes[i][0], boxes[i][1], boxes[i][2], boxes[i][3]}, classes[i],
                     !crowd.empty() && crowd[i]);
}

// Holds a Python callable for C++ code that copies and drops it on any thread: the last copy lets go of
// it under the GIL (or not at all once the interpreter is gone).
class PythonCallable {
 public:
  explicit PythonCallable(py::function callable) : callable_(std::move(callable)) {}
  ~PythonCallable() {
    if (!Py_IsInitialized()) {
      callable_.release();
      return;
    }
    py::gil_scoped_acquire gil;
    callable_ = py::function();
  }
  PythonCallable(const PythonCallable&) = delete;
  PythonCallable& operator=(const PythonCallable&) = delete;

  // Calls it with a borrowed conveyor.Sample (expired afterwards), after `before` (an element's index) when
  // given; the GIL must be held.
  py::object operator()(Sample& sample, bool writable, const py::object& before = py::object()) const {
    py::object view = py::cast(PySample(sample, writable));
    auto* borrowed = view.cast<PySample*>();
    try {
      py::object result = before ? callable_(before, view) : callable_(view);
      borrowed->expire();
      return result;
    } catch (py::error_already_set& error) {
      borrowed->expire();
      // As plain text: the exception object must not outlive the GIL on a pipeline thread.
      throw Error(std::string(py::str(error.type().attr("__name__"))) + ": " +
                  std::string(py::str(error.value())));
    }
  }

 private:
  py::function callable_;
};

void bind_sample_class(py::module_& module) {
  py::class_<PySample>(module, "Sample",
                       "One element: who it is (index, epoch, seed, label, path), its encoded bytes and its "
                       "current pixels. Iterating a Dataset yields Samples that own their element; a Python "
                       "map or filter is handed one that is valid during the call only.")
      .def_property_readonly(
          "index", [](const PySample& s) { return s.get().index; },
          "Position in the epoch's global order (after shuffle, before shard).")
      .def_property_readonly("epoch", [](const PySample& s) { return s.get().epoch; })
      .def_property_readonly(
          "seed", [](const PySample& s) { return s.get().seed; },
          "sample_seed(options.seed, epoch, index): the only randomness ops may use.")
      .def_property(
          "label", [](const PySample& s) { return s.get().label; },
          [](const PySample& s, std::int64_t label) { s.get_writable().label = label; })
      .def_property(
          "path", [](const PySample& s) { return s.get().path; },
          [](const PySample& s, const std::string& path) { s.get_writable().path = path; },
          "The file, or \"<memory:N>\" for in-memory sources (what errors and skips name).")
      .def_property(
          "encoded",
          [](const PySample& s) {
            const std::vector<std::uint8_t>& bytes = s.get().encoded;
            return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
          },
          [](const PySample& s, const py::bytes& bytes) {
            const std::string_view view = bytes;
            s.get_writable().encoded.assign(view.begin(), view.end());
          },
          "The bytes as read (a copy); a source's read sets them (a JPEG or PNG).")
      .def_property(
          "image", [](const PySample& s) { return image_copy(s.get()); },
          [](const PySample& s, const py::buffer& pixels) { set_image(s.get_writable(), pixels); },
          "The current pixels as an (H, W, C) uint8 memoryview (numpy.asarray takes it), a copy; None "
          "before an op produced pixels. Assign a (H, W) or (H, W, C) uint8 array to replace them.")
      .def_property(
          "encoded_mask",
          [](const PySample& s) {
            const std::vector<std::uint8_t>& bytes = s.get().encoded_mask;
            return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
          },
          [](const PySample& s, const py::bytes& bytes) {
            const std::string_view view = bytes;
            s.get_writable().encoded_mask.assign(view.begin(), view.end());
          },
          "The mask's bytes as read (a PNG of class ids), a copy; empty when the sample has none.")
      .def_property_readonly(
          "mask", [](const PySample& s) { return mask_copy(s.get()); },
          "The current mask, (H, W) uint8 or uint16 class ids as a memoryview (a copy); None before an op "
          "decoded it, or without one.")
      .def_property_readonly(
          "boxes", [](const PySample& s) { return boxes_of(s.get().boxes); },
          "[(x0, y0, x1, y1), ...] in the current image's pixels (a copy).")
      .def_property_readonly(
          "box_classes",
          [](const PySample& s) {
            const auto classes = s.get().boxes.classes();
            return std::vector<std::int64_t>(classes.begin(), classes.end());
          },
          "The class of each box.")
      .def_property_readonly(
          "box_crowd",
          [](const PySample& s) {
            const auto crowd = s.get().boxes.crowd();
            return std::vector<bool>(crowd.begin(), crowd.end());
          },
          "Whether each box is a crowd region (COCO's iscrowd).")
      .def(
          "set_boxes",
          [](const PySample& s, const std::vector<std::array<float, 4>>& boxes,
             const std::vector<std::int64_t>& classes,
             const std::vector<bool>& crowd) { set_boxes(s.get_writable(), boxes, classes, crowd); },
          py::arg("boxes"), py::arg("classes"), py::arg("crowd") = std::vector<bool>{},
          "Replaces the boxes ((x0, y0, x1, y1) in the current image's pixels) and their classes.")
      .def_property(
          "tags", [](const PySample& s) { return s.get().tags; },
          [](const PySample& s, std::vector<std::int64_t> tags) { s.get_writable().tags = std::move(tags); },
          "The class ids of a multi-label sample (multi-hot rows in batches).")
      .def_property_readonly(
          "fields",
          [](const PySample& s) {
            py::dict out;
            for (const BatchTensor& tensor : sample_tensors(s.get()))
              out[py::str(std::string(tensor.name))] = tensor_copy(tensor.view);
            return out;
          },
          "Every field's content by name (copies, as memoryviews numpy.asarray takes): \"mask\" (H, W), "
          "\"boxes\" (n, 4), \"box_classes\", \"box_crowd\", \"tags\", \"keypoints\" (n, K, 3), ...; also "
          "attributes (sample.keypoints) where no property of the same name exists.")
      .def("__getattr__",
           [](const PySample& s, const std::string& name) -> py::object {
             for (const BatchTensor& tensor : sample_tensors(s.get()))
               if (tensor.name == name) return tensor_copy(tensor.view);
             throw py::attribute_error("'conveyor.Sample' object has no attribute '" + name + "'");
           })
      .def_property_readonly(
          "shape",
          [](const PySample& s) -> py::object {
            const ConstImageView image = s.get().image();
            if (image.empty()) return py::none();
            return py::make_tuple(image.height, image.width, image.channels);
          },
          "(H, W, C) of the current pixels, or None.")
      .def("__repr__", [](const PySample& s) {
        const Sample& sample = s.get();
        return "conveyor.Sample(index=" + std::to_string(sample.index) +
               ", epoch=" + std::to_string(sample.epoch) + ", label=" + std::to_string(sample.label) +
               ", path='" + sample.path + "')";
      });
}

}  // namespace

py::object owned_sample(Sample sample) {
  return py::cast(PySample(std::make_shared<Sample>(std::move(sample))));
}

std::function<void(Sample&)> python_map(py::function callable) {
  auto shared = std::make_shared<const PythonCallable>(std::move(callable));
  return [shared](Sample& sample) {
    py::gil_scoped_acquire gil;
    const py::object result = (*shared)(sample, /*writable=*/true);
    if (!result.is_none())
      throw Error(
          "a Python map changes the sample in place (sample.image = ..., sample.label = ...) and returns "
          "None; it returned a " +
          std::string(py::str(result.get_type().attr("__name__"))));
  };
}

std::function<bool(const Sample&)> python_filter(py::function callable) {
  auto shared = std::make_shared<const PythonCallable>(std::move(callable));
  return [shared](const Sample& sample) {
    py::gil_scoped_acquire gil;
    // Read-only: the filter's Sample refuses every change.
    const py::object result = (*shared)(const_cast<Sample&>(sample), /*writable=*/false);
    const int keep = PyObject_IsTrue(result.ptr());
    if (keep < 0) {
      PyErr_Clear();
      throw Error("a Python filter returned a value without a truth value");
    }
    return keep == 1;
  };
}

std::function<void(std::size_t, Sample&)> python_read(py::function read) {
  auto shared = std::make_shared<const PythonCallable>(std::move(read));
  return [shared](std::size_t i, Sample& sample) {
    py::gil_scoped_acquire gil;
    (*shared)(sample, /*writable=*/true, py::int_(i));
  };
}

void bind_sample(py::module_& module) {
  bind_sample_class(module);
  py::class_<SampleInfo>(module, "SampleInfo",
                         "Who one sample of a batch is: its index in the epoch's order, epoch, seed, and "
                         "whether it only pads the batch.")
      .def_readonly("index", &SampleInfo::index)
      .def_readonly("epoch", &SampleInfo::epoch)
      .def_readonly("seed", &SampleInfo::seed)
      .def_readonly("padding", &SampleInfo::padding)
      .def("__repr__", [](const SampleInfo& info) {
        return "conveyor.SampleInfo(index=" + std::to_string(info.index) +
               ", epoch=" + std::to_string(info.epoch) + ", seed=" + std::to_string(info.seed) +
               (info.padding ? ", padding=True)" : ")");
      });
}

}  // namespace conveyor::python
