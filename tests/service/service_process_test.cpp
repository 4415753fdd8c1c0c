// The data service as processes on loopback: conveyor-dispatcher, two conveyor-workers and trainers
// (service_trainer). A worker killed with SIGKILL mid-epoch, the dispatcher killed and restarted from its
// journal mid-epoch, a trainer stopped and resumed from its state: every sample of every epoch exactly once,
// each with one checksum. Every wait is bounded, and a watchdog ends a test that hangs anyway.
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "process_fixture.h"
#include "support/watchdog.h"
#include "tests/pipeline/fixtures.h"

namespace conveyor::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kSamples = 3 * 12;
const std::string kHost = "127.0.0.1";

class ServiceAsProcesses : public ::testing::Test {
 protected:
  void SetUp() override {
    processes_.data = make_jpeg_folder(dir_, 3, 12, 40, 56);
    port_ = processes_.start_dispatcher(kHost, 0, dir_ / "journal");
    ASSERT_GT(port_, 0) << processes_.dispatcher_log();
    processes_.start_worker(kHost, address());
    processes_.start_worker(kHost, address());
    ASSERT_TRUE(processes_.wait_for_workers(kHost, address(), 2, 30s));
  }
  void TearDown() override { EXPECT_EQ(processes_.stop_all(), "") << "a server did not stop cleanly"; }
  std::string address() const { return kHost + ":" + std::to_string(port_); }
  std::string sample_log() const { return (dir_ / "samples.txt").string(); }
  // Until the trainer has logged `batches` batches of 4 (bounded).
  void wait_for_batches(std::size_t batches) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (lines_in(sample_log()) < 4 * batches && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(10ms);
  }

  TempDir dir_;
  ServiceProcesses processes_{dir_};
  int port_ = 0;
};

TEST_F(ServiceAsProcesses, ADispatcherTwoWorkersAndATrainerDeliverEverySampleOnce) {
  const Watchdog watchdog(90s, "processes on loopback");
  const ProcessResult trainer = processes_.run_trainer(kHost, address(), {"--log", sample_log()}, 60s);
  ASSERT_EQ(trainer.exit_code, 0) << trainer.out;
  EXPECT_EQ(exactly_once(read_sample_log(sample_log()), 2, kSamples), "") << trainer.out;
}

TEST_F(ServiceAsProcesses, AWorkerKilledMidEpochLosesNoSampleAndRepeatsNone) {
  const Watchdog watchdog(90s, "a worker killed");
  ChildProcess& trainer = processes_.start_trainer(
      kHost, address(), {"--log", sample_log(), "--epochs", "3", "--pause-ms", "40"}, "trainer");
  wait_for_batches(6);
  processes_.worker(1).signal(SIGKILL);
  const ProcessResult done = trainer.wait(60s);
  const std::string report = processes_.log("trainer");
  ASSERT_EQ(done.exit_code, 0) << report;
  EXPECT_EQ(exactly_once(read_sample_log(sample_log()), 3, kSamples), "") << report;
  // Each of the killed worker's streams (ServiceOptions::streams_per_worker) counts its loss.
  EXPECT_NE(report.find(", 2 lost"), std::string::npos) << "the killed worker's loss is reported:\n"
                                                        << report;
}

TEST_F(ServiceAsProcesses, TheDispatcherRestartedMidEpochFromItsJournalTheJobGoesOn) {
  const Watchdog watchdog(90s, "the dispatcher restarted");
  ChildProcess& trainer = processes_.start_trainer(
      kHost, address(), {"--log", sample_log(), "--epochs", "3", "--pause-ms", "40"}, "trainer");
  wait_for_batches(6);
  processes_.dispatcher().signal(SIGKILL);
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(processes_.start_dispatcher(kHost, port_, dir_ / "journal"), port_)
      << processes_.dispatcher_log();
  const ProcessResult done = trainer.wait(60s);
  const std::string report = processes_.log("trainer");
  ASSERT_EQ(done.exit_code, 0) << report;
  EXPECT_EQ(exactly_once(read_sample_log(sample_log()), 3, kSamples), "") << report;
  // The job, its token and the consumer's cursor came back from the journal; the workers beat on.
  EXPECT_EQ(processes_.dispatcher_log().find("(0 journal records"), std::string::npos)
      << processes_.dispatcher_log();
  EXPECT_TRUE(processes_.wait_for_workers(kHost, address(), 1, 10s));
}

TEST_F(ServiceAsProcesses, ATrainerResumedFromItsStateGetsTheRemainingSamplesOnce) {
  const Watchdog watchdog(90s, "a trainer resumed");
  const std::string state = (dir_ / "state.json").string();
  const ProcessResult first = processes_.run_trainer(
      kHost, address(), {"--log", sample_log(), "--state-out", state, "--stop-after", "7"}, 60s);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_EQ(lines_in(sample_log()), 28u);
  const ProcessResult rest =
      processes_.run_trainer(kHost, address(), {"--log", sample_log(), "--resume", state}, 60s);
  ASSERT_EQ(rest.exit_code, 0) << rest.out;
  EXPECT_EQ(exactly_once(read_sample_log(sample_log()), 2, kSamples), "") << rest.out;
}

}  // namespace
}  // namespace conveyor::testing
