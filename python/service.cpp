// conveyor.Dataset.from_service and conveyor.service: the data service from Python, with the C++ names
// (conveyor/service/). A worker's chains may be Python callables: a builder gets the parameters as a dict and
// returns (Dataset, (height, width, channels)); it runs under the GIL, once per job.
#include <Python.h>

#include <chrono>
#include <memory>
#include <thread>

#include "conveyor/service/client.h"
#include "conveyor/service/dispatcher.h"
#include "conveyor/service/service_error.h"
#include "conveyor/service/status.h"
#include "conveyor/service/worker.h"
#include "python/bindings.h"
#include "python/choices.h"

namespace conveyor::python {
namespace {

using namespace conveyor::service;

constexpr Choice<ShardRemainder> kShardRemainder[] = {{"pad", ShardRemainder::pad},
                                                      {"drop", ShardRemainder::drop}};

// Dispatchers and workers join their threads when they go, and a worker's thread may be running a Python
// chain builder (which takes the GIL): they are deleted with the GIL released.
struct DeleteWithoutGil {
  template <class T>
  void operator()(T* object) const {
    py::gil_scoped_release released;
    delete object;
  }
};
template <class T>
using Held = std::unique_ptr<T, DeleteWithoutGil>;

Tls tls_of(const std::optional<std::filesystem::path>& folder) {
  return folder ? Tls::from_folder(*folder) : Tls{};
}

ChainRegistry registry_of(const py::dict& chains) {
  ChainRegistry registry;
  for (const auto& [name, builder] : chains) {
    // The callable lives as long as the registry's copies: held under the GIL, released under it.
    auto callable = std::shared_ptr<py::object>(new py::object(py::reinterpret_borrow<py::object>(builder)),
                                                [](py::object* o) {
                                                  py::gil_scoped_acquire gil;
                                                  delete o;
                                                });
    registry.add(name.cast<std::string>(), [callable](const ChainParameters& parameters) {
      py::gil_scoped_acquire gil;
      const py::tuple built = (*callable)(parameters);
      if (built.size() != 2)
        throw InvalidArgument("a chain builder returns (Dataset, (height, width, channels))");
      const auto shape = built[1].cast<std::tuple<int, int, int>>();
      return Chain{built[0].cast<Dataset>(),
                   BatchOptions{.sample_shape =
                                    ImageShape{std::get<0>(shape), std::get<1>(shape), std::get<2>(shape)}}};
    });
  }
  return registry;
}

WorkerOptions worker_options(const std::string& dispatcher, int threads, const std::string& host, int port,
                             const std::string& advertise, std::vector<int> cpus, const py::dict& chains,
                             const std::optional<std::filesystem::path>& tls, std::size_t shared_memory_mb) {
  WorkerOptions o;
  o.dispatcher = dispatcher;
  o.threads = threads;
  o.listen_host = host;
  o.port = port;
  o.advertise_host = advertise;
  o.cpus = std::move(cpus);
  o.chains = registry_of(chains);
  o.tls = tls_of(tls);
  o.shared_memory_bytes = shared_memory_mb << 20;
  return o;
}

}  // namespace

void bind_service(py::module_& module) {
  py::module_ service = module.def_submodule(
      "service", "The data service: a dispatcher, workers that make batches, and trainers that read them.");
  py::module_::import("sys").attr("modules")["conveyor.service"] = service;

  // conveyor.service.ServiceError (a conveyor.Error) with .kind: "unavailable", "unauthorized", "refused",
  // ...
  static py::exception<ServiceError> error(service, "ServiceError", module.attr("Error"));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ServiceError& e) {
      py::object value = py::reinterpret_borrow<py::object>(error.ptr())(e.what());
      value.attr("kind") = to_string(e.kind());
      PyErr_SetObject(error.ptr(), value.ptr());
    }
  });

  py::class_<Dispatcher, Held<Dispatcher>>(service, "Dispatcher",
                                           "A dispatcher listening until closed (or garbage collected).")
      .def(
          py::init([](int port, const std::string& host, const std::optional<std::filesystem::path>& work_dir,
                      const std::optional<std::filesystem::path>& tls) {
            DispatcherOptions o;
            o.port = port;
            o.listen_host = host;
            if (work_dir) o.work_dir = *work_dir;
            o.tls = tls_of(tls);
            py::gil_scoped_release released;
            return Held<Dispatcher>(new Dispatcher(o));
          }),
          py::kw_only(), py::arg("port") = 0, py::arg("host") = "0.0.0.0", py::arg("work_dir") = py::none(),
          py::arg("tls") = py::none(),
          "Listens on host:port (0: a free port, see .port), keeping its journal in work_dir when given; tls "
          "is "
          "a folder with ca.pem, cert.pem and key.pem.")
      .def_property_readonly("port", &Dispatcher::port);

  py::class_<Worker, Held<Worker>>(service, "Worker",
                                   "A worker serving its chains until closed (or garbage collected).")
      .def(py::init([](const std::string& dispatcher, int threads, const std::string& host, int port,
                       const std::string& advertise, std::vector<int> cpus, const py::dict& chains,
                       const std::optional<std::filesystem::path>& tls, std::size_t shared_memory_mb) {
             WorkerOptions o = worker_options(dispatcher, threads, host, port, advertise, std::move(cpus),
                                              chains, tls, shared_memory_mb);
             py::gil_scoped_release released;
             return Held<Worker>(new Worker(std::move(o)));
           }),
           py::arg("dispatcher"), py::kw_only(), py::arg("threads") = 0, py::arg("host") = "0.0.0.0",
           py::arg("port") = 0, py::arg("advertise") = "", py::arg("cpus") = std::vector<int>{},
           py::arg("chains") = py::dict(), py::arg("tls") = py::none(),
           py::arg("shared_memory_mb") = WorkerOptions{}.shared_memory_bytes >> 20,
           "Registers with the dispatcher (grpc://HOST:PORT) and makes the splits trainers ask for. chains "
           "maps a name to a builder: builder(parameters: dict) -> (Dataset, (height, width, channels)); "
           "\"standard\" is built in. Trainers on this host get their batches through shared memory of "
           "shared_memory_mb a stream (0: through the socket).")
      .def_property_readonly("port", &Worker::port)
      .def_property_readonly("address", &Worker::address)
      .def_property_readonly("registered", &Worker::registered)
      .def_property_readonly("counters", [](const Worker& w) {
        const WorkerCounters c = w.counters();
        py::dict d;
        d["splits"] = c.splits;
        d["batches"] = c.batches;
        d["samples"] = c.elements;
        d["bytes_sent"] = c.bytes_sent;
        d["bytes_lent"] = c.bytes_lent;
        d["refused"] = c.refused;
        d["busy_seconds"] = c.busy_seconds;
        d["streams"] = c.streams;
        return d;
      });

  service.def(
      "run_worker",
      [](const std::string& dispatcher, int threads, const std::string& host, int port,
         const std::string& advertise, std::vector<int> cpus, const py::dict& chains,
         const std::optional<std::filesystem::path>& tls, std::size_t shared_memory_mb) {
        WorkerOptions o = worker_options(dispatcher, threads, host, port, advertise, std::move(cpus), chains,
                                         tls, shared_memory_mb);
        std::unique_ptr<Worker> worker;
        {
          py::gil_scoped_release released;
          worker = std::make_unique<Worker>(std::move(o));
        }
        // Until Python sees a signal (KeyboardInterrupt on SIGINT): the worker goes when the exception does.
        for (;;) {
          {
            py::gil_scoped_release released;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
          if (PyErr_CheckSignals() != 0) {
            py::gil_scoped_release released;
            worker.reset();
            throw py::error_already_set();
          }
        }
      },
      py::arg("dispatcher"), py::kw_only(), py::arg("threads") = 0, py::arg("host") = "0.0.0.0",
      py::arg("port") = 0, py::arg("advertise") = "", py::arg("cpus") = std::vector<int>{},
      py::arg("chains") = py::dict(), py::arg("tls") = py::none(),
      py::arg("shared_memory_mb") = WorkerOptions{}.shared_memory_bytes >> 20,
      "Runs a worker (see Worker) until the process is interrupted: a worker program of one call.");

  service.def(
      "status",
      [](const std::string& url, const std::optional<std::filesystem::path>& tls) {
        py::gil_scoped_release released;
        return format_status(service_status(url, tls_of(tls)));
      },
      py::arg("url"), py::kw_only(), py::arg("tls") = py::none(),
      "What the service at the dispatcher url is made of: its workers (host, CPUs, versions, figures) and "
      "jobs.");

  auto dataset = py::reinterpret_borrow<py::class_<Dataset>>(module.attr("Dataset"));
  dataset.def_static(
      "from_service",
      [](const std::string& url, const std::string& chain, const ChainParameters& parameters,
         std::uint64_t seed, std::size_t batch_size, std::uint64_t epochs, bool shuffle, bool drop_remainder,
         int rank, int world_size, const std::string& remainder, std::size_t split_batches,
         bool deterministic, int local_threads, bool local_fallback, bool local_gpu_first,
         std::size_t prefetch, const std::string& job, const std::string& token, const py::dict& chains,
         const std::optional<std::filesystem::path>& tls, double timeout, std::size_t streams_per_worker,
         bool keep_received_memory, bool shared_memory) {
        ServiceOptions o;
        o.batch_size = batch_size;
        o.epochs = epochs;
        o.shuffle = shuffle;
        o.drop_remainder = drop_remainder;
        o.ranks.rank = rank;
        o.ranks.world_size = world_size;
        o.remainder = parse_choice("remainder", remainder, kShardRemainder);
        o.split_batches = split_batches;
        o.deterministic = deterministic;
        o.local_threads = local_threads;
        o.local_fallback = local_fallback;
        o.local_gpu_first = local_gpu_first;
        o.prefetch = prefetch;
        o.job = job;
        o.token = token;
        o.chains = registry_of(chains);
        o.tls = tls_of(tls);
        o.timeout = std::chrono::milliseconds(static_cast<long long>(timeout * 1000));
        o.streams_per_worker = streams_per_worker;
        o.keep_received_memory = keep_received_memory;
        o.shared_memory = shared_memory;
        const ChainSpec spec{chain, parameters, seed};
        py::gil_scoped_release released;
        return from_service(url, spec, o);
      },
      py::arg("url"), py::arg("chain") = "standard", py::arg("parameters") = ChainParameters{}, py::kw_only(),
      py::arg("seed") = 0, py::arg("batch_size") = 256, py::arg("epochs") = 1, py::arg("shuffle") = true,
      py::arg("drop_remainder") = false, py::arg("rank") = 0, py::arg("world_size") = 1,
      py::arg("remainder") = "pad", py::arg("split_batches") = 0, py::arg("deterministic") = false,
      py::arg("local_threads") = 0, py::arg("local_fallback") = true, py::arg("local_gpu_first") = true,
      py::arg("prefetch") = 4, py::arg("job") = "", py::arg("token") = "", py::arg("chains") = py::dict(),
      py::arg("tls") = py::none(), py::arg("timeout") = 5.0, py::arg("streams_per_worker") = 2,
      py::arg("keep_received_memory") = true, py::arg("shared_memory") = true,
      "The batches of a chain made by the data service whose dispatcher is at url (\"grpc://HOST:PORT\"): "
      "every sample of every epoch once per rank, a BatchedDataset like any other (to_device, state, "
      "resume). "
      "chain and parameters name what the workers build (\"standard\": data, format, size, flip, distort); "
      "local_threads lets this process's cores make splits too (while workers serve, every image of them "
      "that a to_device feeder's GPU decoder takes goes to it, unless local_gpu_first is False); "
      "streams_per_worker is the streams to each worker, a connection each; keep_received_memory fixes "
      "glibc's malloc thresholds for the process (unless GLIBC_TUNABLES sets them) so received memory is "
      "reused; shared_memory takes the batches of workers on this host through shared memory rather than "
      "the socket; chains are builders this process can run itself (see Worker).");
}

}  // namespace conveyor::python
