// The data service across two hosts (tests/support/two_hosts.sh: two network namespaces joined by a veth
// pair): the dispatcher and a worker on one, a worker and the trainer on the other. Run by ctest under
// two_hosts.sh; skipped when its hosts are not there.
#include <gtest/gtest.h>

#include <cstdlib>

#include "process_fixture.h"
#include "support/watchdog.h"
#include "tests/pipeline/fixtures.h"

namespace conveyor::testing {
namespace {

using namespace std::chrono_literals;

TEST(ServiceAcrossTwoHosts, ADispatcherTwoWorkersAndATrainerDeliverEverySampleOnce) {
  const char* a = std::getenv("CONVEYOR_HOST_A");
  const char* b = std::getenv("CONVEYOR_HOST_B");
  if (a == nullptr || b == nullptr) GTEST_SKIP() << "not run under tests/support/two_hosts.sh";
  const Watchdog watchdog(120s, "two hosts");
  const TempDir dir;
  ServiceProcesses processes(dir);
  processes.data = make_jpeg_folder(dir, 3, 12, 40, 56);
  const int port = processes.start_dispatcher(a, 0, dir / "journal");
  ASSERT_GT(port, 0) << processes.dispatcher_log();
  const std::string dispatcher = std::string(a) + ":" + std::to_string(port);
  processes.start_worker(a, dispatcher);
  processes.start_worker(b, dispatcher);
  ASSERT_TRUE(processes.wait_for_workers(b, dispatcher, 2, 30s)) << processes.dispatcher_log();
  const std::string log = (dir / "samples.txt").string();
  const ProcessResult trainer = processes.run_trainer(b, dispatcher, {"--log", log}, 60s);
  ASSERT_EQ(trainer.exit_code, 0) << trainer.out;
  EXPECT_EQ(exactly_once(read_sample_log(log), 2, 36), "") << trainer.out;
  EXPECT_NE(trainer.out.find("worker " + std::string(a)), std::string::npos) << trainer.out;
  EXPECT_NE(trainer.out.find("worker " + std::string(b)), std::string::npos) << trainer.out;
  EXPECT_EQ(processes.stop_all(), "");
}

}  // namespace
}  // namespace conveyor::testing
