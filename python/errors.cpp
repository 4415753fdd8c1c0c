// conveyor's exceptions in Python, one type per C++ type, with the same context as attributes:
//   Error(RuntimeError)
//   ├── DecodeError           .failure ("truncated", "not_jpeg", ...)
//   ├── IoError (also OSError)
//   ├── InvalidArgument (also ValueError)
//   ├── PipelineError         .path, .stage, .reason
//   └── DeviceError
//       └── DeviceMemoryError .requested, .available (bytes)
#include <string>
#include <utility>

#include "conveyor/error.h"
#include "python/bindings.h"

namespace conveyor::python {
namespace {

// The Python types, made once when the module is imported. pybind11's exception translators are plain
// function pointers, so this is how they reach the types; the module's attributes keep them alive.
struct ExceptionTypes {
  py::handle error, decode_error, io_error, invalid_argument, pipeline_error, device_error,
      device_memory_error;
};

ExceptionTypes& exception_types() {
  static ExceptionTypes types;
  return types;
}

py::handle make_type(py::module_& module, const char* name, py::tuple bases, const char* doc) {
  const std::string qualified = std::string("conveyor.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  module.add_object(name, py::handle(type));
  return type;  // the reference PyErr_NewExceptionWithDoc gave is never dropped: the type lives forever
}

// Raises `type(error.what())` with the given attributes set on the instance.
void raise(py::handle type, const std::exception& error,
           std::initializer_list<std::pair<const char*, py::object>> attributes = {}) {
  py::object instance = type(error.what());
  for (const auto& [name, value] : attributes) instance.attr(name) = value;
  PyErr_SetObject(type.ptr(), instance.ptr());
}

void translate(std::exception_ptr pending) {
  const ExceptionTypes& types = exception_types();
  try {
    if (pending) std::rethrow_exception(pending);
  } catch (const PipelineError& e) {
    raise(types.pipeline_error, e,
          {{"path", py::str(e.path())}, {"stage", py::str(e.stage())}, {"reason", py::str(e.reason())}});
  } catch (const DecodeError& e) {
    raise(types.decode_error, e, {{"failure", py::str(to_string(e.failure()))}});
  } catch (const IoError& e) {
    raise(types.io_error, e);
  } catch (const InvalidArgument& e) {
    raise(types.invalid_argument, e);
  } catch (const DeviceMemoryError& e) {
    raise(types.device_memory_error, e,
          {{"requested", py::int_(e.requested())}, {"available", py::int_(e.available())}});
  } catch (const DeviceError& e) {
    raise(types.device_error, e);
  } catch (const Error& e) {
    raise(types.error, e);
  }
  // Anything else propagates to pybind11's own translators (std::bad_alloc -> MemoryError, ...).
}

}  // namespace

void bind_errors(py::module_& module) {
  ExceptionTypes& types = exception_types();
  const py::handle runtime_error(PyExc_RuntimeError), os_error(PyExc_OSError), value_error(PyExc_ValueError);
  types.error = make_type(module, "Error", py::make_tuple(runtime_error),
                          "Base class of every exception conveyor raises.");
  types.decode_error = make_type(module, "DecodeError", py::make_tuple(types.error),
                                 "An encoded image could not be decoded; .failure names why (\"truncated\", "
                                 "\"not_jpeg\", \"corrupt\", \"unsupported\", \"too_large\", ...).");
  types.io_error = make_type(module, "IoError", py::make_tuple(types.error, os_error),
                             "A file or folder could not be listed or read.");
  types.invalid_argument = make_type(module, "InvalidArgument", py::make_tuple(types.error, value_error),
                                     "An argument or a configuration is invalid.");
  types.pipeline_error =
      make_type(module, "PipelineError", py::make_tuple(types.error),
                "An element failed inside the pipeline (on_error=\"fail\"): .path (the file, or "
                "\"<memory:N>\"), .stage (\"read\", an op's name, \"batch\", ...) and .reason.");
  types.device_error = make_type(module, "DeviceError", py::make_tuple(types.error),
                                 "A CUDA call failed, or a device was asked for that is not there.");
  types.device_memory_error =
      make_type(module, "DeviceMemoryError", py::make_tuple(types.device_error),
                "A device allocation did not fit: .requested and .available, in bytes.");
  py::register_exception_translator(&translate);
}

}  // namespace conveyor::python
