// service_status and format_status (conveyor/service/status.h).
#include "conveyor/service/status.h"

#include <cstdio>

#include "conveyor/version.h"
#include "src/service/common/protocol.h"
#include "src/service/transport/links.h"

namespace conveyor::service {

ServiceStatus service_status(const std::string& url, const Tls& tls) {
  v1::GetStatusRequest request;
  request.mutable_caller()->set_protocol(detail::kProtocolVersion);
  request.mutable_caller()->set_version(CONVEYOR_VERSION_STRING);
  const v1::GetStatusResponse r =
      detail::connect_dispatcher(parse_address(url), detail::LinkOptions{.tls = tls})->get_status(request);
  ServiceStatus out;
  out.version = r.version();
  out.uptime_seconds = r.uptime_seconds();
  for (const v1::WorkerStatus& w : r.workers()) {
    WorkerStatus s;
    s.address = w.address();
    s.host = w.info().host();
    s.cpu = w.info().cpu();
    s.version = w.info().version();
    s.cores = w.info().cores();
    s.threads = w.info().threads();
    s.libraries.assign(w.info().libraries().begin(), w.info().libraries().end());
    s.chains.assign(w.info().chains().begin(), w.info().chains().end());
    s.alive = w.alive();
    s.seconds_since_heartbeat = w.seconds_since_heartbeat();
    const v1::WorkerFigures& f = w.figures();
    s.counters = {.splits = f.splits(),
                  .batches = f.batches(),
                  .elements = f.elements(),
                  .bytes_sent = f.bytes_sent(),
                  .refused = f.refused(),
                  .bytes_lent = f.bytes_lent(),
                  .busy_seconds = f.busy_seconds(),
                  .streams = f.streams()};
    s.resident_bytes = f.resident_bytes();
    out.workers.push_back(std::move(s));
  }
  for (const v1::JobStatus& j : r.jobs()) {
    JobStatus s;
    s.name = j.job().name();
    s.fingerprint = j.job().fingerprint();
    s.chain = j.job().chain().name();
    s.batch_size = j.job().geometry().batch_size();
    s.consumers = j.job().geometry().consumers();
    s.epochs = j.job().geometry().epochs();
    s.samples = j.job().description().source_size();
    for (const v1::ConsumerStatus& c : j.consumers()) {
      ConsumerStatus cs;
      cs.consumer = c.consumer();
      cs.generation = c.generation();
      cs.next_split = c.cursor();
      cs.batches = c.last_report().batches();
      cs.elements = c.last_report().elements();
      cs.wait_seconds = c.last_report().wait_seconds();
      cs.note = c.last_report().note();
      for (const v1::PartFigures& p : c.last_report().parts())
        cs.parts.push_back({.name = p.name(),
                            .batches = p.batches(),
                            .elements = p.elements(),
                            .wire_bytes = p.wire_bytes(),
                            .shared_bytes = p.shared_bytes(),
                            .busy_seconds = p.busy_seconds(),
                            .failures = p.failures()});
      s.consumer_status.push_back(std::move(cs));
    }
    out.jobs.push_back(std::move(s));
  }
  return out;
}

std::string format_status(const ServiceStatus& status) {
  char line[512];
  std::string out;
  std::snprintf(line, sizeof line, "dispatcher: conveyor %s, up %.0f s, %zu worker(s), %zu job(s)\n",
                status.version.c_str(), status.uptime_seconds, status.workers.size(), status.jobs.size());
  out += line;
  for (const WorkerStatus& w : status.workers) {
    const WorkerCounters& c = w.counters;
    std::snprintf(
        line, sizeof line,
        "worker %s  %s  (%s, heartbeat %.1f s ago)\n  host %s, %u CPU(s) for it, %u threads: %s\n"
        "  conveyor %s; %zu streams; %llu splits, %llu samples in %.1f s busy (%.0f samples/s), %.1f MB "
        "sent (%.0f bytes/sample), %.1f MB through shared memory, %llu refused; resident %.0f MB\n",
        w.address.c_str(), w.alive ? "alive" : "LOST", w.chains.empty() ? "" : w.chains.front().c_str(),
        w.seconds_since_heartbeat, w.host.c_str(), w.cores, w.threads, w.cpu.c_str(), w.version.c_str(),
        c.streams, static_cast<unsigned long long>(c.splits), static_cast<unsigned long long>(c.elements),
        c.busy_seconds, c.busy_seconds > 0 ? static_cast<double>(c.elements) / c.busy_seconds : 0.0,
        static_cast<double>(c.bytes_sent) / 1e6,
        c.elements > 0 ? static_cast<double>(c.bytes_sent) / static_cast<double>(c.elements) : 0.0,
        static_cast<double>(c.bytes_lent) / 1e6, static_cast<unsigned long long>(c.refused),
        static_cast<double>(w.resident_bytes) / 1e6);
    out += line;
    std::string chains, libraries;
    for (const std::string& chain : w.chains) chains += (chains.empty() ? "" : ", ") + chain;
    for (const std::string& library : w.libraries) libraries += (libraries.empty() ? "" : ", ") + library;
    out += "  chains: " + chains + "\n  libraries: " + libraries + "\n";
  }
  for (const JobStatus& j : status.jobs) {
    std::snprintf(line, sizeof line,
                  "job '%s' (%s, fingerprint %s): %llu samples, batch %llu, %llu consumer(s), %llu epochs\n",
                  j.name.c_str(), j.chain.c_str(), j.fingerprint.c_str(),
                  static_cast<unsigned long long>(j.samples), static_cast<unsigned long long>(j.batch_size),
                  static_cast<unsigned long long>(j.consumers), static_cast<unsigned long long>(j.epochs));
    out += line;
    for (const ConsumerStatus& c : j.consumer_status) {
      std::snprintf(
          line, sizeof line,
          "  consumer %llu (generation %llu): next split %llu, %llu batches, %llu samples, waited %.1f s\n",
          static_cast<unsigned long long>(c.consumer), static_cast<unsigned long long>(c.generation),
          static_cast<unsigned long long>(c.next_split), static_cast<unsigned long long>(c.batches),
          static_cast<unsigned long long>(c.elements), c.wait_seconds);
      out += line;
      std::uint64_t all = 0;
      for (const SourcePart& p : c.parts) all += p.elements;
      for (const SourcePart& p : c.parts) {
        std::snprintf(
            line, sizeof line,
            "    %-30s %5.1f %% of samples, %.0f samples/s busy, %.0f bytes/sample (%.0f more shared), %llu "
            "lost\n",
            p.name.c_str(),
            all > 0 ? 100.0 * static_cast<double>(p.elements) / static_cast<double>(all) : 0.0,
            p.busy_seconds > 0 ? static_cast<double>(p.elements) / p.busy_seconds : 0.0,
            p.elements > 0 ? static_cast<double>(p.wire_bytes) / static_cast<double>(p.elements) : 0.0,
            p.elements > 0 ? static_cast<double>(p.shared_bytes) / static_cast<double>(p.elements) : 0.0,
            static_cast<unsigned long long>(p.failures));
        out += line;
      }
      if (!c.note.empty()) out += "    " + c.note + "\n";
    }
  }
  return out;
}

}  // namespace conveyor::service
