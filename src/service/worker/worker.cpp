// Worker and run_worker (conveyor/service/worker.h): the data plane server, the streams, and registration
// with the dispatcher by heartbeat.
#include "conveyor/service/worker.h"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/library_version.h"
#include "conveyor/service/service_error.h"
#include "conveyor/version.h"
#include "src/service/common/job_identity.h"
#include "src/service/common/protocol.h"
#include "src/service/common/recycling_host_memory.h"
#include "src/service/common/stop_signals.h"
#include "src/service/transport/links.h"
#include "src/service/worker/job_cache.h"
#include "src/service/worker/worker_stream.h"

namespace conveyor::service {
namespace {

using namespace detail;

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::uint32_t usable_cores(const std::vector<int>& cpus) {
  if (!cpus.empty()) return static_cast<std::uint32_t>(cpus.size());
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return std::thread::hardware_concurrency();
  return static_cast<std::uint32_t>(CPU_COUNT(&set));
}

std::uint64_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

v1::Caller caller() {
  v1::Caller c;
  c.set_protocol(kProtocolVersion);
  c.set_version(CONVEYOR_VERSION_STRING);
  return c;
}

}  // namespace

struct Worker::Parts final : WorkerCalls {
  explicit Parts(WorkerOptions o)
      : options(std::move(o)),
        dispatcher(connect_dispatcher(parse_address(options.dispatcher), LinkOptions{.tls = options.tls})),
        jobs(options.chains, *dispatcher),
        // Each split's pool comes and goes; its buffers are kept for the next split (a few splits' worth).
        memory(std::make_shared<RecyclingHostMemory>(nullptr, std::size_t{1} << 30)) {
    where.threads = options.threads;
    where.cpus = options.cpus;
    where.worker_nice = options.worker_nice;
    where.host_memory = memory;
    // The frames in the stream's queue, the one on the wire, and the one being encoded hold pool buffers.
    where.held_batches = options.stream_depth + 2;
    server = serve_worker(*this, options.listen_host + ":" + std::to_string(options.port), options.tls,
                          options.stream_depth);
    const std::string host = !options.advertise_host.empty() ? options.advertise_host
                             : options.listen_host == "0.0.0.0" || options.listen_host.empty()
                                 ? host_name()
                                 : options.listen_host;
    address = host + ":" + std::to_string(server->port());
    heartbeat = std::thread([this] { beat(); });
  }

  ~Parts() override {
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    heartbeat.join();
    server.reset();  // cancels the open streams
    std::lock_guard lock(mutex);
    streams.clear();  // joins their threads
  }

  std::shared_ptr<StreamSession> open(const v1::StreamOpen& open, std::shared_ptr<FrameSink> sink) override {
    // Quick, on the transport's thread: the stream's own thread fetches the job and checks the token.
    auto stream = std::make_shared<WorkerStream>(
        StreamContext{jobs, where, tally, options.shared_memory_bytes}, open, std::move(sink));
    std::lock_guard lock(mutex);
    streams.push_back(stream);
    return stream;
  }

  v1::DescribeChainResponse describe_chain(const v1::DescribeChainRequest& request) override {
    if (request.caller().protocol() != kProtocolVersion)
      throw ServiceError(ServiceError::Kind::refused,
                         "this worker speaks " + describe_protocol(kProtocolVersion, "") + ", the caller " +
                             describe_protocol(request.caller().protocol(), request.caller().version()));
    v1::DescribeChainResponse response;
    *response.mutable_description() = jobs.describe(request.job_id(), request.caller().token());
    return response;
  }

  v1::WorkerInfo info() const {
    v1::WorkerInfo out;
    out.set_host(host_name());
    out.set_cpu(cpu_model());
    out.set_cores(usable_cores(options.cpus));
    out.set_threads(
        static_cast<std::uint32_t>(options.threads > 0 ? options.threads : usable_cores(options.cpus)));
    out.set_version(library_version());
    for (const LibraryVersion& library : data_library_versions())
      out.add_libraries(library.name + " " + library.loaded.to_string());
    for (const std::string& chain : options.chains.names()) out.add_chains(chain);
    out.set_concurrent_splits(2);
    return out;
  }

  v1::WorkerFigures figures() const {
    v1::WorkerFigures out;
    out.set_splits(tally.splits.load());
    out.set_batches(tally.batches.load());
    out.set_elements(tally.elements.load());
    out.set_bytes_sent(tally.bytes_sent.load());
    out.set_bytes_lent(tally.bytes_lent.load());
    out.set_busy_seconds(static_cast<double>(tally.busy_ns.load()) / 1e9);
    out.set_streams(static_cast<std::uint32_t>(tally.streams.load()));
    out.set_resident_bytes(resident_bytes());
    out.set_refused(tally.refused.load());
    return out;
  }

  // Registers, then beats; registers again when the dispatcher forgot this worker (it lost its state); keeps
  // trying while the dispatcher does not answer. Streams that ended are joined here, off gRPC's threads.
  void beat() noexcept {
    std::unique_lock lock(mutex);
    while (!stopping) {
      std::vector<std::shared_ptr<WorkerStream>> ended;
      std::erase_if(streams, [&](const std::shared_ptr<WorkerStream>& s) {
        if (!s->finished() || s.use_count() > 1) return false;
        ended.push_back(s);
        return true;
      });
      lock.unlock();
      ended.clear();
      try {
        if (worker_id == 0) {
          v1::RegisterWorkerRequest request;
          *request.mutable_caller() = caller();
          request.set_address(address);
          *request.mutable_info() = info();
          worker_id = dispatcher->register_worker(request).worker_id();
        } else {
          v1::WorkerHeartbeatRequest request;
          *request.mutable_caller() = caller();
          request.set_worker_id(worker_id);
          *request.mutable_figures() = figures();
          if (!dispatcher->worker_heartbeat(request).known()) worker_id = 0;
        }
      } catch (const ServiceError&) {
        // Not answering (not started yet, restarting): the next beat tries again. Streams go on meanwhile.
      } catch (const std::exception&) {
      }
      registered_flag = worker_id != 0;
      lock.lock();
      wake.wait_for(lock, options.heartbeat, [&] { return stopping; });
    }
  }

  const WorkerOptions options;
  std::unique_ptr<DispatcherLink> dispatcher;
  JobCache jobs;
  std::shared_ptr<RecyclingHostMemory> memory;
  PipelineOptionChanges where;
  WorkerTally tally;
  std::unique_ptr<Server> server;
  std::string address;
  std::uint64_t worker_id = 0;  // the heartbeat thread's
  std::atomic<bool> registered_flag{false};

  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::vector<std::shared_ptr<WorkerStream>> streams;
  std::thread heartbeat;
};

Worker::Worker(WorkerOptions options) {
  if (options.dispatcher.empty())
    throw InvalidArgument("WorkerOptions: the dispatcher's address is required");
  parts_ = std::make_unique<Parts>(std::move(options));
}

Worker::~Worker() = default;

int Worker::port() const noexcept { return parts_->server->port(); }
const std::string& Worker::address() const noexcept { return parts_->address; }
bool Worker::registered() const noexcept { return parts_->registered_flag.load(); }

WorkerCounters Worker::counters() const {
  const WorkerTally& t = parts_->tally;
  return {.splits = t.splits.load(),
          .batches = t.batches.load(),
          .elements = t.elements.load(),
          .bytes_sent = t.bytes_sent.load(),
          .refused = t.refused.load(),
          .bytes_lent = t.bytes_lent.load(),
          .busy_seconds = static_cast<double>(t.busy_ns.load()) / 1e9,
          .streams = t.streams.load()};
}

void run_worker(const WorkerOptions& options, const std::function<void(const Worker&)>& started) {
  const detail::StopSignals stop;  // before the worker starts its threads
  Worker worker(options);
  if (started) started(worker);
  stop.wait();
}

}  // namespace conveyor::service
