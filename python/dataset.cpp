// conveyor.PipelineOptions, conveyor.Dataset and conveyor.BatchedDataset: the chain of conveyor/dataset.h
// with the same names and meaning. Iterating makes a new pipeline each time (tf.data's dataset/iterator
// split): `for batch in ds:` twice runs the chain twice.
#include "conveyor/dataset.h"

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/field_kinds.h"
#include "conveyor/trace.h"
#include "python/bindings.h"
#include "python/choices.h"
#include "python/device.h"
#include "python/iterators.h"
#include "python/sample.h"

namespace conveyor::python {
namespace {

constexpr Choice<OnError> kOnError[] = {{"fail", OnError::fail}, {"skip", OnError::skip}};
constexpr Choice<Unpaired> kUnpaired[] = {{"fail", Unpaired::fail}, {"skip", Unpaired::skip}};
constexpr Choice<CrowdBoxes> kCrowd[] = {{"drop", CrowdBoxes::drop}, {"keep", CrowdBoxes::keep}};
constexpr Choice<MaskType> kMaskTypes[] = {{"uint8", MaskType::uint8}, {"uint16", MaskType::uint16}};

// The FieldOptions in effect where keywords change some of them.
FieldOptions& fields_of(PipelineOptionChanges& options) {
  if (!options.fields) options.fields = FieldOptions{};
  return *options.fields;
}

// Sets one option from a keyword argument; false when there is no option of that name.
bool set_option(PipelineOptionChanges& options, const std::string& name, const py::handle& value) {
  if (name == "threads")
    options.threads = value.cast<int>();
  else if (name == "worker_nice")
    options.worker_nice = value.cast<int>();
  else if (name == "deterministic")
    options.deterministic = value.cast<bool>();
  else if (name == "on_error")
    options.on_error = parse_choice("on_error", value.cast<std::string>(), kOnError);
  else if (name == "seed")
    options.seed = value.cast<std::uint64_t>();
  else if (name == "max_in_flight")
    options.max_in_flight = value.cast<std::size_t>();
  else if (name == "trace")
    options.trace = value.is_none() ? nullptr : value.cast<std::shared_ptr<TraceRecorder>>();
  else if (name == "held_batches")
    options.held_batches = value.cast<std::size_t>();
  else if (name == "max_file_bytes")
    options.max_file_bytes = value.cast<std::size_t>();
  else if (name == "mask_fill")
    fields_of(options).mask_fill = value.cast<std::uint16_t>();
  else if (name == "min_box_area")
    fields_of(options).min_box_area = value.cast<double>();
  else if (name == "min_box_visibility")
    fields_of(options).min_box_visibility = value.cast<double>();
  else
    return false;
  return true;
}

constexpr const char* kOptionNames =
    "threads, worker_nice, deterministic, on_error, seed, max_in_flight, trace, held_batches, "
    "max_file_bytes, "
    "mask_fill, min_box_area, min_box_visibility";

// with_options(options) or with_options(**keywords), as in C++: a PipelineOptions sets every option, keywords
// set the options they name and keep the others as the dataset had them.
PipelineOptionChanges options_from(const py::object& options, const py::kwargs& keywords,
                                   const FieldOptions& current_fields = {}) {
  if (!options.is_none() && !keywords.empty())
    throw InvalidArgument("with_options takes a PipelineOptions or keywords, not both");
  PipelineOptionChanges out = options.is_none() ? PipelineOptionChanges{}
                                                : PipelineOptionChanges::all(options.cast<PipelineOptions>());
  for (const auto& [key, value] : keywords) {
    const std::string name = py::str(key);
    if ((name == "mask_fill" || name == "min_box_area" || name == "min_box_visibility") && !out.fields)
      out.fields = current_fields;
    if (!set_option(out, name, value))
      throw InvalidArgument("with_options: no option '" + name + "' (options: " + kOptionNames + ")");
  }
  return out;
}

// Dataset.from_source: a Python object with __len__ and read(i, sample) (and optionally `fields`, names of
// field kinds: conveyor.field_kinds()) as a SampleSource. read runs under the GIL on the pipeline's threads,
// one element at a time: a source of Python code is as slow as a Python map.
class PythonSource final : public SampleSource {
 public:
  explicit PythonSource(const py::object& source)
      : size_(py::len(source)), read_(python_read(source.attr("read"))), name_(py::str(py::type::of(source).attr("__name__"))) {
    if (py::hasattr(source, "fields")) {
      std::vector<std::string> names;
      for (const py::handle field : source.attr("fields")) names.push_back(py::str(field));
      try {
        fields_ = field_set_of(names);
      } catch (const InvalidArgument& error) {
        throw InvalidArgument(std::string("Dataset.from_source: ") + error.what());
      }
    }
  }
  std::size_t size() const override { return size_; }
  void read(std::size_t i, Sample& sample, const ReadLimits&) const override { read_(i, sample); }
  FieldSet fields() const override { return fields_; }
  std::string describe() const override { return "python source " + name_ + " " + std::to_string(size_); }

 private:
  std::size_t size_;
  std::function<void(std::size_t, Sample&)> read_;
  std::string name_;
  FieldSet fields_;
};

std::vector<std::string> paths_of(const py::iterable& paths) {
  std::vector<std::string> out;
  const py::object fspath = py::module_::import("os").attr("fspath");
  for (const py::handle path : paths) out.push_back(py::str(fspath(path)));
  return out;
}

// Bytes-like objects (bytes, bytearray, contiguous memoryviews and arrays), each copied once.
std::vector<std::vector<std::uint8_t>> buffers_of(const py::iterable& buffers) {
  std::vector<std::vector<std::uint8_t>> out;
  for (const py::handle item : buffers) {
    Py_buffer view{};
    if (PyObject_GetBuffer(item.ptr(), &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
    const auto* bytes = static_cast<const std::uint8_t*>(view.buf);
    try {
      out.emplace_back(bytes, bytes + view.len);
    } catch (...) {
      PyBuffer_Release(&view);
      throw;
    }
    PyBuffer_Release(&view);
  }
  return out;
}

std::optional<ImageShape> shape_of(const py::object& shape) {
  if (shape.is_none()) return std::nullopt;
  const auto dims = shape.cast<std::vector<int>>();
  if (dims.size() != 3) throw InvalidArgument("sample_shape is (height, width, channels)");
  return ImageShape{dims[0], dims[1], dims[2]};
}

py::object shape_tuple(const std::optional<ImageShape>& shape) {
  if (!shape) return py::none();
  return py::make_tuple(shape->height, shape->width, shape->channels);
}

void bind_options(py::module_& module) {
  py::class_<PipelineOptions>(module, "PipelineOptions",
                              "How a dataset's iterators run (conveyor/dataset.h has the meaning of each).")
      .def(py::init([](const py::kwargs& keywords) {
             return options_from(py::none(), keywords).applied_to(PipelineOptions{});
           }),
           (std::string("PipelineOptions(**options), options among: ") + kOptionNames).c_str())
      .def_readwrite("threads", &PipelineOptions::threads,
                     "Threads of the iterator's task arena; 0: all cores.")
      .def_readwrite("worker_nice", &PipelineOptions::worker_nice,
                     "Nice value (0-19) the threads raise theirs to before working for the pipeline, so "
                     "that the training loop's threads get a core first (default 10); 0: the process's.")
      .def_readwrite("deterministic", &PipelineOptions::deterministic,
                     "True: the order the chain defines, the same at any thread count.")
      .def_property(
          "on_error", [](const PipelineOptions& o) { return choice_name(o.on_error, kOnError); },
          [](PipelineOptions& o, const std::string& value) {
            o.on_error = parse_choice("on_error", value, kOnError);
          },
          "\"fail\" (the iterator raises PipelineError) or \"skip\" (dropped, counted in stats()).")
      .def_readwrite("seed", &PipelineOptions::seed, "Base of every element's seed.")
      .def_readwrite("max_in_flight", &PipelineOptions::max_in_flight,
                     "Elements processed at once; 0: 8 x threads.")
      .def_readwrite("trace", &PipelineOptions::trace, "A TraceRecorder, or None.")
      .def_readwrite("held_batches", &PipelineOptions::held_batches,
                     "Batches the consumer may keep alive while it asks for the next one.")
      .def_readwrite("max_file_bytes", &PipelineOptions::max_file_bytes,
                     "The read stage refuses larger files; 0: no limit.")
      .def_property(
          "mask_fill", [](const PipelineOptions& o) { return o.fields.mask_fill; },
          [](PipelineOptions& o, std::uint16_t value) { o.fields.mask_fill = value; },
          "The class id of mask pixels a geometric op makes up (padding): the id the loss ignores (255).")
      .def_property(
          "min_box_area", [](const PipelineOptions& o) { return o.fields.min_box_area; },
          [](PipelineOptions& o, double value) { o.fields.min_box_area = value; },
          "After each geometric op, boxes with less area in the picture (output pixels squared) are dropped.")
      .def_property(
          "min_box_visibility", [](const PipelineOptions& o) { return o.fields.min_box_visibility; },
          [](PipelineOptions& o, double value) { o.fields.min_box_visibility = value; },
          "... and so are boxes that keep less than this share of their area in the picture.")
      .def("__repr__", [](const PipelineOptions& o) {
        return "conveyor.PipelineOptions(threads=" + std::to_string(o.threads) +
               ", worker_nice=" + std::to_string(o.worker_nice) +
               ", deterministic=" + (o.deterministic ? "True" : "False") + ", on_error='" +
               choice_name(o.on_error, kOnError) + "', seed=" + std::to_string(o.seed) + ")";
      });
}

void bind_dataset_class(py::module_& module) {
  py::class_<Dataset>(module, "Dataset",
                      "An immutable description of an input pipeline; every method returns a new Dataset "
                      "and nothing runs until it is iterated (yielding Samples) or batched and iterated.")
      .def_static(
          "image_folder",
          [](const std::filesystem::path& root) {
            py::gil_scoped_release released;
            return Dataset::image_folder(root);
          },
          py::arg("root"),
          "Every sub-folder of root is a class (sorted, labels 0..K-1); its *.jpg / *.jpeg files, at any "
          "depth, are the class's images, in sorted order.")
      .def_static(
          "files",
          [](const py::iterable& paths, std::vector<std::int64_t> labels) {
            return Dataset::files(paths_of(paths), std::move(labels));
          },
          py::arg("paths"), py::arg("labels") = std::vector<std::int64_t>{},
          "These files (str or os.PathLike), with these labels (one per file; none: every label is -1).")
      .def_static(
          "list_file",
          [](const std::filesystem::path& list, const std::filesystem::path& root) {
            py::gil_scoped_release released;
            return Dataset::list_file(list, root);
          },
          py::arg("list"), py::arg("root") = std::filesystem::path(),
          "A text file of \"<path> <label>\" lines; paths relative to root (default: the list's folder).")
      .def_static(
          "segmentation_folder",
          [](const std::filesystem::path& root, const std::string& images, const std::string& masks,
             const std::string& unpaired) {
            const SegmentationFolderOptions options{images, masks,
                                                    parse_choice("unpaired", unpaired, kUnpaired)};
            py::gil_scoped_release released;
            return Dataset::segmentation_folder(root, options);
          },
          py::arg("root"), py::kw_only(), py::arg("images") = "images", py::arg("masks") = "masks",
          py::arg("unpaired") = "fail",
          "Semantic segmentation: root/images/NAME.jpg (.jpeg, .png) with root/masks/NAME.png, matched by "
          "their path without the extension; each sample's mask is decoded with its image by the decoding "
          "ops. An unpaired file raises (naming both paths) or, with unpaired=\"skip\", is left out and "
          "counted in stats().")
      .def_static(
          "coco_detection",
          [](const std::filesystem::path& annotations, const std::filesystem::path& images,
             const std::string& crowd, bool contiguous_classes, bool skip_empty) {
            const CocoOptions options{parse_choice("crowd", crowd, kCrowd), contiguous_classes, skip_empty};
            py::gil_scoped_release released;
            return Dataset::coco_detection(annotations, images, options);
          },
          py::arg("annotations"), py::arg("images"), py::kw_only(), py::arg("crowd") = "drop",
          py::arg("contiguous_classes") = true, py::arg("skip_empty") = false,
          "Object detection from a COCO instances JSON: boxes from each annotation's bbox [x, y, w, h] as "
          "(x, y, x + w, y + h), classes 0..K-1 in category-id order (class_names) unless "
          "contiguous_classes=False; crowd=\"drop\" or \"keep\" (flagged in box_crowd); skip_empty leaves "
          "out images without a box.")
      .def_static(
          "tar_shards",
          [](const py::object& shards, const std::vector<std::string>& image_extensions,
             const std::string& label_extension, const std::string& mask_extension,
             const std::string& fields_extension, bool random_access, bool shuffle_shards, std::uint64_t seed,
             std::size_t parallel_shards, std::uint64_t cache_bytes, const std::string& cache_folder,
             bool require_label) {
            std::vector<std::string> names;
            if (py::isinstance<py::str>(shards)) {
              names = expand_shard_pattern(shards.cast<std::string>());
            } else {
              names = paths_of(shards);
            }
            TarShardOptions options;
            options.image_extensions = image_extensions;
            options.label_extension = label_extension;
            options.mask_extension = mask_extension;
            options.fields_extension = fields_extension;
            options.random_access = random_access;
            options.shuffle_shards = shuffle_shards;
            options.seed = seed;
            options.parallel_shards = parallel_shards;
            options.cache.max_bytes = cache_bytes;
            options.cache.folder = cache_folder;
            options.require_label = require_label;
            py::gil_scoped_release released;
            return Dataset::tar_shards(std::move(names), options);
          },
          py::arg("shards"), py::kw_only(),
          py::arg("image_extensions") = std::vector<std::string>{"jpg", "jpeg"},
          py::arg("label_extension") = "cls", py::arg("mask_extension") = "",
          py::arg("fields_extension") = "", py::arg("random_access") = false,
          py::arg("shuffle_shards") = true, py::arg("seed") = 0, py::arg("parallel_shards") = 4,
          py::arg("cache_bytes") = 0, py::arg("cache_folder") = "", py::arg("require_label") = false,
          "WebDataset tar shards: a pattern (\"shard-{000000..000009}.tar\", a glob, a URL, s3://bucket/key) "
          "or a list of shards; \"s3://bucket/prefix/\" lists the shards under it (endpoint, region and keys "
          "from AWS's variables or credentials file). cache_bytes > 0 keeps remote shards on local disk "
          "(cache_folder, default conveyor's cache folder). A sample without its label member has label -1 "
          "unless require_label. A sample is the members sharing a key: its image (image_extensions), "
          "label (.cls), and, when asked for, its mask (mask_extension=\"mask.png\") and boxes "
          "(fields_extension=\"json\": {\"boxes\": [[x0, y0, x1, y1], ...], \"classes\": [...]}). "
          "random_access reads local, uncompressed shards like files (shuffle() over the whole epoch).")
      .def_static(
          "from_source",
          [](const py::object& source) {
            return Dataset::from_source(std::make_shared<PythonSource>(source));
          },
          py::arg("source"),
          "A source of your own: an object with __len__() and read(i, sample), which fills element i into "
          "the "
          "conveyor.Sample (sample.encoded = JPEG or PNG bytes, sample.encoded_mask, sample.set_boxes(...), "
          "sample.tags, sample.label, sample.path), and optionally `fields` (names among \"mask\", "
          "\"boxes\", "
          "\"tags\") so that batches have room for them. Every ordering method, sharding and resume work on "
          "it "
          "as on files; read runs under the GIL, one element at a time (slow, like a Python map).")
      .def_static(
          "memory",
          [](const py::iterable& buffers, std::vector<std::int64_t> labels) {
            return Dataset::memory(buffers_of(buffers), std::move(labels));
          },
          py::arg("buffers"), py::arg("labels") = std::vector<std::int64_t>{},
          "Encoded images held in memory (bytes-like objects, copied); Sample.path is \"<memory:N>\".")
      .def(
          "shuffle",
          [](const Dataset& self, std::optional<std::size_t> buffer_size, std::optional<std::uint64_t> seed) {
            const std::size_t size = buffer_size.value_or(Dataset::whole_epoch);
            return seed ? self.shuffle(size, *seed) : self.shuffle(size);
          },
          py::arg("buffer_size") = py::none(), py::arg("seed") = py::none(),
          "Reshuffled every epoch. Without buffer_size the whole epoch as one keyed permutation (its "
          "iterator "
          "state restores at once); with it a buffered shuffle (buffer_size >= the size: uniform). The seed "
          "derives from the pipeline's seed unless given.")
      .def(
          "repeat",
          [](const Dataset& self, const std::optional<std::uint64_t>& count) {
            return count ? self.repeat(*count) : self.repeat();
          },
          py::arg("count") = py::none(), "The stream so far, count times (epochs 0..count-1); None: forever.")
      // The split by index only: the even split over ranks (ShardRemainder) is not bound yet.
      .def("shard", py::overload_cast<std::size_t, std::size_t>(&Dataset::shard, py::const_),
           py::arg("num_shards"), py::arg("index"))
      .def("skip", &Dataset::skip, py::arg("count"))
      .def("take", &Dataset::take, py::arg("count"))
      .def("map", py::overload_cast<SampleOp>(&Dataset::map, py::const_), py::arg("op"),
           "Runs a conveyor.ops op on every element, in parallel.")
      .def(
          "map",
          [](const Dataset& self, py::function callable, const std::string& name) {
            return self.map(name, python_map(std::move(callable)));
          },
          py::arg("callable"), py::arg("name") = "map",
          "Runs callable(sample) on every element: it changes the conveyor.Sample in place (sample.image = "
          "array, sample.label = n) and returns None. It runs under the GIL, one element at a time, and is "
          "slow next to the built-in ops: use it for what they cannot do.")
      .def(
          "filter",
          [](const Dataset& self, py::function keep, const std::string& name) {
            return self.filter(name, python_filter(std::move(keep)));
          },
          py::arg("keep"), py::arg("name") = "filter",
          "Keeps the elements for which keep(sample) is true (a read-only conveyor.Sample). Runs under the "
          "GIL, one element at a time: slow. shuffle, shard, skip and take may not follow a filter.")
      .def(
          "with_options",
          [](const Dataset& self, const py::object& options, const py::kwargs& keywords) {
            return self.with_options(options_from(options, keywords, self.options().fields));
          },
          py::arg("options") = py::none(),
          (std::string(
               "Replaces the options of every iterator made from the result, as in C++: "
               "with_options(PipelineOptions(...)) or with_options(threads=16, seed=42, on_error=\"skip\"); "
               "options not given take their defaults. Options: ") +
           kOptionNames)
              .c_str())
      .def("prefetch", &Dataset::prefetch, py::arg("samples"), "Samples kept ready ahead of the consumer.")
      .def(
          "batch",
          [](const Dataset& self, std::size_t batch_size, const py::object& sample_shape, bool drop_remainder,
             const std::string& mask_type, std::size_t max_boxes, std::size_t num_classes) {
            BatchOptions options;
            options.sample_shape = shape_of(sample_shape);
            options.drop_remainder = drop_remainder;
            options.mask_type = parse_choice("mask_type", mask_type, kMaskTypes);
            options.max_boxes = max_boxes;
            options.num_classes = num_classes;
            return self.batch(batch_size, options);
          },
          py::arg("batch_size"), py::arg("sample_shape") = py::none(), py::arg("drop_remainder") = false,
          py::kw_only(), py::arg("mask_type") = "uint8", py::arg("max_boxes") = 0, py::arg("num_classes") = 0,
          "Groups samples into batches of fixed-size images (sample_shape (H, W, C), or that of the first "
          "element); the last, smaller batch is kept unless drop_remainder. Samples with masks: stacked "
          "(N, H, W) (mask_type when sample_shape is given, else the first element's); with boxes: padded "
          "to (N, M, 4), M each batch's most or max_boxes; tags: multi-hot (N, num_classes).")
      .def("__iter__", &iterate_samples, "Runs the pipeline, yielding conveyor.Sample (owning copies).")
      .def("source_size", &Dataset::source_size, "Elements in the source (before shuffle, repeat, ...).")
      .def("source_path", &Dataset::source_path, py::arg("i"))
      .def("source_label", &Dataset::source_label, py::arg("i"))
      .def_property_readonly("class_names", &Dataset::class_names,
                             "An image_folder's (or coco_detection's) classes, in label order.")
      .def_property_readonly(
          "fields", [](const Dataset& self) { return self.fields().names(); },
          "The fields the source's samples carry besides image and label: names of field kinds (\"mask\", "
          "\"boxes\", \"tags\", ...).")
      .def_property_readonly("options", &Dataset::options);
}

void bind_batched_dataset(py::module_& module) {
  py::class_<BatchedDataset>(module, "BatchedDataset",
                             "A Dataset grouped into batches; iterating yields conveyor.Batch (host "
                             "memory), to_device(...) yields conveyor.DeviceBatch.")
      .def("prefetch", &BatchedDataset::prefetch, py::arg("batches"),
           "Batches kept ready ahead of the consumer (the pipeline pauses while this many are ready).")
      .def(
          "with_options",
          [](const BatchedDataset& self, const py::object& options, const py::kwargs& keywords) {
            return self.with_options(options_from(options, keywords, self.options().fields));
          },
          py::arg("options") = py::none(), "As Dataset.with_options.")
      .def(
          "to_device",
          [](const BatchedDataset& self, const py::object& device, const py::object& dtype,
             const std::string& layout, const py::object& mean, const py::object& std,
             std::optional<int> depth, bool gpu_augment, std::optional<bool> gpu_decode,
             std::optional<double> gpu_share) {
            return to_device(self, device, dtype, layout, mean, std, depth,
                             {.augment = gpu_augment, .decode = gpu_decode, .share = gpu_share});
          },
          py::arg("device") = "auto", py::kw_only(), py::arg("dtype") = py::none(),
          py::arg("layout") = "NCHW", py::arg("mean") = py::none(), py::arg("std") = py::none(),
          py::arg("depth") = py::none(), py::arg("gpu_augment") = true, py::arg("gpu_decode") = py::none(),
          py::arg("gpu_share") = py::none(),
          "Iterates the batches through a new DeviceFeeder (see conveyor.DeviceFeeder for the arguments): "
          "device \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"; yields conveyor.DeviceBatch, normalized when "
          "dtype, mean or std is given. On a GPU the work after the copy runs there: with gpu_augment and "
          "normalized images, the chain's trailing flip_horizontal and distort run fused with normalize on "
          "the GPU (the same images, bit for bit, drawn from the same per-sample seeds; False keeps them in "
          "the pipeline); gpu_decode (None: when decode_random_resized_crop is then the chain's last map and "
          "depth is 2 or more; True or False: as said) lets that op share its images with the GPU's JPEG "
          "decoder (see DeviceFeeder's gpu_decode and gpu_share). depth None: 3 ring slots, 4 when the GPU "
          "decodes (the feeder then stages batches ahead on a thread of its own, and a loop still holds the "
          "last batch's tensors when it asks for the next). When the GPU decodes, run the training loop on a "
          "CUDA stream of its own (with torch.cuda.stream(torch.cuda.Stream()): ...): on PyTorch's default "
          "stream a torch.compile'd ResNet-18 fed this way ran at a median 81.8 % of its rate on "
          "GPU-resident data, on a side stream at 92.5 % (bench/results/2026-11-27-h100-run15-loop-stream, "
          "-run16-...).")
      .def("__iter__", &iterate_batches, "Runs the pipeline, yielding conveyor.Batch.")
      .def_property_readonly("batch_size", &BatchedDataset::batch_size)
      .def_property_readonly("drop_remainder", &BatchedDataset::drop_remainder)
      .def_property_readonly("prefetch_depth", &BatchedDataset::prefetch_depth)
      .def_property_readonly("sample_shape",
                             [](const BatchedDataset& self) { return shape_tuple(self.sample_shape()); })
      .def_property_readonly("samples", &BatchedDataset::samples)
      .def_property_readonly("class_names", &BatchedDataset::class_names)
      .def_property_readonly("options", &BatchedDataset::options);
}

}  // namespace

void bind_dataset(py::module_& module) {
  bind_options(module);
  bind_dataset_class(module);
  bind_batched_dataset(module);
  module.def("field_kinds", &field_kind_names,
             "The field kinds conveyor knows by name (Dataset.fields, from_source's `fields`), in the order "
             "batches list their tensors.");
}

}  // namespace conveyor::python
