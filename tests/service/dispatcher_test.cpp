// The dispatcher's answers and its journal: a job is joined only with its chain, token and protocol; each
// consumer gets its splits in order; a restart from the journal carries on where the last answer left off,
// a record cut short by a crash included.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "conveyor/service/service_error.h"
#include "conveyor/version.h"
#include "src/service/common/job_identity.h"
#include "src/service/common/protocol.h"
#include "src/service/dispatcher/dispatcher_core.h"
#include "support/temp_dir.h"

namespace conveyor::service::detail {
namespace {

using Kind = ServiceError::Kind;
using namespace std::chrono_literals;

v1::JoinJobRequest join(std::uint64_t seed = 1, const std::string& token = "secret",
                        std::uint64_t consumer = 0) {
  v1::JoinJobRequest r;
  r.mutable_caller()->set_protocol(kProtocolVersion);
  r.mutable_caller()->set_version(CONVEYOR_VERSION_STRING);
  r.mutable_caller()->set_token(token);
  r.set_job_name("imagenet");
  r.mutable_chain()->set_name("standard");
  (*r.mutable_chain()->mutable_parameters())["data"] = "/data/train";
  r.mutable_chain()->set_seed(seed);
  r.mutable_geometry()->set_batch_size(4);
  r.mutable_geometry()->set_split_batches(2);
  r.mutable_geometry()->set_consumers(2);
  r.mutable_geometry()->set_epochs(1);
  r.set_consumer(consumer);
  r.set_described(true);
  r.mutable_description()->set_source_size(20);  // 10 a consumer: 3 batches, 2 splits
  r.mutable_description()->set_data_identity("abc");
  r.set_attach(true);
  return r;
}

v1::GetSplitRequest split_of(const v1::JoinJobResponse& joined, std::uint64_t consumer,
                             const std::string& token = "secret") {
  v1::GetSplitRequest r;
  r.mutable_caller()->set_protocol(kProtocolVersion);
  r.mutable_caller()->set_token(token);
  r.set_job_id(joined.job().job_id());
  r.set_consumer(consumer);
  r.set_generation(joined.generation());
  return r;
}

Kind kind_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const ServiceError& error) {
    return error.kind();
  }
  ADD_FAILURE() << "no ServiceError";
  return Kind::failed;
}

TEST(Dispatcher, HandsEachConsumerItsSplitsInOrderThenTheEnd) {
  DispatcherCore dispatcher({}, 1s);
  const v1::JoinJobResponse first = dispatcher.join_job(join(1, "secret", 0));
  const v1::JoinJobResponse second = dispatcher.join_job(join(1, "secret", 1));
  EXPECT_EQ(first.job().job_id(), second.job().job_id());
  EXPECT_TRUE(first.job().token_hash().empty()) << "the token's hash stays with the dispatcher";
  for (std::uint64_t k = 0; k < 2; ++k) {
    EXPECT_EQ(dispatcher.get_split(split_of(first, 0)).split(), k);
    EXPECT_EQ(dispatcher.get_split(split_of(second, 1)).split(), k);
  }
  EXPECT_TRUE(dispatcher.get_split(split_of(first, 0)).end());
}

TEST(Dispatcher, RefusesAnotherChainTokenProtocolOrConsumer) {
  DispatcherCore dispatcher({}, 1s);
  const v1::JoinJobResponse joined = dispatcher.join_job(join());
  EXPECT_EQ(kind_of([&] { dispatcher.join_job(join(2)); }),
            Kind::refused);  // another seed: another fingerprint
  EXPECT_EQ(kind_of([&] { dispatcher.join_job(join(1, "guess")); }), Kind::unauthorized);
  EXPECT_EQ(kind_of([&] { dispatcher.join_job(join(1, "")); }), Kind::unauthorized);
  EXPECT_EQ(kind_of([&] { dispatcher.get_split(split_of(joined, 0, "guess")); }), Kind::unauthorized);
  v1::JoinJobRequest old = join();
  old.mutable_caller()->set_protocol(kProtocolVersion + 1);
  EXPECT_EQ(kind_of([&] { dispatcher.join_job(old); }), Kind::refused);
  EXPECT_EQ(kind_of([&] { dispatcher.join_job(join(1, "secret", 2)); }),
            Kind::refused);  // a job of 2 consumers
  v1::JoinJobRequest other_data = join();
  other_data.mutable_description()->set_data_identity("xyz");
  EXPECT_EQ(kind_of([&] { dispatcher.join_job(other_data); }), Kind::refused);
  v1::GetSplitRequest unknown = split_of(joined, 0);
  unknown.set_job_id(77);
  EXPECT_EQ(kind_of([&] { dispatcher.get_split(unknown); }), Kind::not_found);
  try {
    dispatcher.join_job(join(2));
  } catch (const ServiceError& error) {
    EXPECT_NE(std::string(error.what()).find("seed 2"), std::string::npos) << error.what();
  }
}

TEST(Dispatcher, ANewerTrainerTakesTheConsumerOver) {
  DispatcherCore dispatcher({}, 1s);
  const v1::JoinJobResponse old = dispatcher.join_job(join());
  EXPECT_EQ(dispatcher.get_split(split_of(old, 0)).split(), 0u);
  v1::JoinJobRequest resumed = join();
  resumed.set_cursor(1);  // the newer trainer's own position
  const v1::JoinJobResponse now = dispatcher.join_job(resumed);
  EXPECT_EQ(now.generation(), old.generation() + 1);
  EXPECT_EQ(kind_of([&] { dispatcher.get_split(split_of(old, 0)); }), Kind::refused);
  EXPECT_EQ(dispatcher.get_split(split_of(now, 0)).split(), 1u);
}

TEST(Dispatcher, ARestartFromTheJournalCarriesOn) {
  const testing::TempDir dir;
  v1::JoinJobResponse joined;
  std::uint64_t worker = 0;
  {
    DispatcherCore dispatcher(dir.path(), 1s);
    joined = dispatcher.join_job(join());
    EXPECT_EQ(dispatcher.get_split(split_of(joined, 0)).split(), 0u);
    v1::RegisterWorkerRequest w;
    w.mutable_caller()->set_protocol(kProtocolVersion);
    w.set_address("10.77.0.2:4000");
    worker = dispatcher.register_worker(w).worker_id();
  }
  // A crash in the middle of the next record: its first bytes are on disk.
  {
    std::ofstream(dir.path() / "journal", std::ios::app | std::ios::binary)
        << std::string("\x20\0\0\0\x01", 5);
  }
  DispatcherCore restarted(dir.path(), 1s);
  EXPECT_EQ(restarted.replayed(), 5u);  // job created, described, consumer attached, split, worker
  EXPECT_EQ(restarted.get_split(split_of(joined, 0)).split(), 1u);
  EXPECT_EQ(kind_of([&] { restarted.join_job(join(1, "guess")); }), Kind::unauthorized)
      << "the token survives";
  v1::WorkerHeartbeatRequest beat;
  beat.mutable_caller()->set_protocol(kProtocolVersion);
  beat.set_worker_id(worker);
  EXPECT_TRUE(restarted.worker_heartbeat(beat).known());
  v1::GetStatusRequest status;
  status.mutable_caller()->set_protocol(kProtocolVersion);
  const v1::GetStatusResponse s = restarted.get_status(status);
  ASSERT_EQ(s.workers_size(), 1);
  EXPECT_EQ(s.workers(0).address(), "10.77.0.2:4000");
  ASSERT_EQ(s.jobs_size(), 1);
  EXPECT_TRUE(s.jobs(0).job().token_hash().empty());
  EXPECT_EQ(s.jobs(0).consumers(0).cursor(), 2u);
}

}  // namespace
}  // namespace conveyor::service::detail
