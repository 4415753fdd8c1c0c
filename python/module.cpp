// The extension module conveyor._conveyor: conveyor's C++ API with the same names (python/bindings.h), which
// the package `conveyor` (python/conveyor/__init__.py) re-exports.
//
//   import conveyor, torch
//   ds = (conveyor.Dataset.image_folder("photos/train")
//           .shuffle(10_000, seed=42).repeat()
//           .map(conveyor.ops.decode_random_resized_crop(224))
//           .map(conveyor.ops.flip_horizontal(0.5))
//           .map(conveyor.ops.distort(brightness=0.4, contrast=0.4, saturation=0.4))
//           .with_options(threads=16, seed=42, on_error="skip")
//           .batch(256).prefetch(4))
//   for batch in ds.to_device("cuda:0", dtype="bfloat16", layout="NCHW", mean=..., std=...):
//       x, y = torch.from_dlpack(batch.images), torch.from_dlpack(batch.labels)
#include <pybind11/pybind11.h>

#include "conveyor/version.h"
#include "python/bindings.h"

PYBIND11_MODULE(_conveyor, module) {
  namespace py = pybind11;
  using namespace conveyor::python;
  module.doc() =
      "conveyor: a C++ input pipeline that keeps GPUs fed (oneTBB, libjpeg-turbo ROI decode, batches in "
      "pinned memory, a device feeder), with batches handed over zero-copy through DLPack.";
  module.attr("__version__") = conveyor::library_version();
  module.attr("built_with_cuda") = py::bool_(CONVEYOR_BUILT_WITH_CUDA != 0);

  bind_errors(module);
  bind_tensor(module);
  bind_observe(module);
  py::module_ ops = module.def_submodule("ops", "The built-in image ops, as SampleOps for Dataset.map.");
  bind_ops(ops);
  // So that `import conveyor.ops` and `from conveyor.ops import flip_horizontal` work too.
  py::module_::import("sys").attr("modules")["conveyor.ops"] = ops;
  bind_sample(module);
  bind_batches(module);
  bind_device(module);
  bind_dataset(module);
#ifdef CONVEYOR_PYTHON_SERVICE
  bind_service(module);
#endif
}
