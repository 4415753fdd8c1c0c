// Ranks from the launchers' environment variables (torchrun's, Open MPI's and Slurm's), read through a map.
#include "conveyor/ranks.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "conveyor/error.h"

namespace conveyor {
namespace {

using Variables = std::map<std::string, std::string>;

Environment from(Variables variables) {
  return [variables = std::move(variables)](const std::string& name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

Ranks read(Variables variables) { return ranks_from_environment(from(std::move(variables))); }

// The message of the InvalidArgument that reading `variables` throws ("" when it does not throw).
std::string error_of(Variables variables) {
  try {
    read(std::move(variables));
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "";
}

TEST(Ranks, WithoutALauncherTheProcessIsRankZeroOfOne) {
  const Ranks ranks = read({});
  EXPECT_EQ(ranks, Ranks{});
  EXPECT_EQ(ranks.world_size, 1);
  EXPECT_EQ(ranks.source, RankSource::single_process);
  EXPECT_TRUE(ranks.is_main());
}

TEST(Ranks, ReadsTorchrunsVariables) {
  const Ranks ranks = read({{"RANK", "5"},
                            {"WORLD_SIZE", "8"},
                            {"LOCAL_RANK", "1"},
                            {"LOCAL_WORLD_SIZE", "4"},
                            {"MASTER_ADDR", "node-0.cluster"},
                            {"MASTER_PORT", "29500"}});
  EXPECT_EQ(ranks.rank, 5);
  EXPECT_EQ(ranks.world_size, 8);
  EXPECT_EQ(ranks.local_rank, 1);
  EXPECT_EQ(ranks.local_world_size, 4);
  EXPECT_EQ(ranks.master_addr, "node-0.cluster");
  EXPECT_EQ(ranks.master_port, 29500);
  EXPECT_EQ(ranks.source, RankSource::torchrun);
  EXPECT_FALSE(ranks.is_main());
  EXPECT_STREQ(to_string(ranks.source), "torchrun");
}

TEST(Ranks, ReadsOpenMpisVariables) {
  const Ranks ranks = read({{"OMPI_COMM_WORLD_RANK", "3"},
                            {"OMPI_COMM_WORLD_SIZE", "4"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                            {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                            {"MASTER_ADDR", "10.0.0.1"},
                            {"MASTER_PORT", "1234"}});
  EXPECT_EQ(ranks.rank, 3);
  EXPECT_EQ(ranks.world_size, 4);
  EXPECT_EQ(ranks.local_rank, 1);
  EXPECT_EQ(ranks.local_world_size, 2);
  EXPECT_EQ(ranks.master_addr, "10.0.0.1");
  EXPECT_EQ(ranks.master_port, 1234);
  EXPECT_EQ(ranks.source, RankSource::open_mpi);
}

TEST(Ranks, WithoutTheLocalPairTheJobIsOnOneHost) {
  const Ranks ranks = read({{"RANK", "2"}, {"WORLD_SIZE", "3"}});
  EXPECT_EQ(ranks.local_rank, 2);
  EXPECT_EQ(ranks.local_world_size, 3);
  EXPECT_TRUE(ranks.master_addr.empty());
  EXPECT_EQ(ranks.master_port, 0);
}

TEST(Ranks, BothLaunchersMayBeSetWhenTheyAgree) {
  const Ranks ranks = read(
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_EQ(ranks.rank, 1);
  EXPECT_EQ(ranks.world_size, 2);
  EXPECT_EQ(ranks.source, RankSource::torchrun);
}

TEST(Ranks, RejectsValuesThatAreNotDecimalIntegers) {
  for (const std::string bad : {"", "-1", "+1", "1.0", "0x2", " 1", "1 ", "one", "99999999999"}) {
    const std::string message = error_of({{"RANK", bad}, {"WORLD_SIZE", "4"}});
    EXPECT_NE(message.find("RANK='" + bad + "'"), std::string::npos) << "'" << bad << "': " << message;
  }
  EXPECT_NE(
      error_of({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"MASTER_PORT", "http"}}).find("MASTER_PORT='http'"),
      std::string::npos);
}

TEST(Ranks, RejectsARankOutsideTheWorld) {
  EXPECT_NE(error_of({{"RANK", "4"}, {"WORLD_SIZE", "4"}}).find("RANK=4 is not below WORLD_SIZE=4"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE=0 is below 1"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}})
                .find("LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(error_of({{"OMPI_COMM_WORLD_RANK", "7"}, {"OMPI_COMM_WORLD_SIZE", "2"}})
                .find("OMPI_COMM_WORLD_RANK=7 is not below OMPI_COMM_WORLD_SIZE=2"),
            std::string::npos);
}

TEST(Ranks, RejectsMoreLocalThanGlobalProcesses) {
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}})
                .find("LOCAL_WORLD_SIZE=4 is larger than WORLD_SIZE=2"),
            std::string::npos);
}

TEST(Ranks, RejectsHalfAPair) {
  EXPECT_NE(error_of({{"RANK", "0"}}).find("RANK is set but WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(error_of({{"WORLD_SIZE", "2"}}).find("WORLD_SIZE is set but RANK is not"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}})
                .find("LOCAL_RANK is set but LOCAL_WORLD_SIZE is not"),
            std::string::npos);
  EXPECT_NE(error_of({{"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "1"}}).find("RANK and WORLD_SIZE are not"),
            std::string::npos);
}

TEST(Ranks, RejectsLaunchersThatDisagree) {
  const std::string message = error_of(
      {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_NE(message.find("disagree: RANK=0 but OMPI_COMM_WORLD_RANK=1"), std::string::npos) << message;
}

TEST(Ranks, RejectsABadRendezvousAddress) {
  EXPECT_NE(error_of({{"MASTER_PORT", "0"}}).find("not in 1..65535"), std::string::npos);
  EXPECT_NE(error_of({{"MASTER_PORT", "65536"}}).find("not in 1..65535"), std::string::npos);
  EXPECT_NE(error_of({{"MASTER_ADDR", ""}}).find("MASTER_ADDR is set but empty"), std::string::npos);
}

// What srun gives the third task of a step of 7 tasks on three nodes, 3 + 2 + 2, the task on node 1.
const Variables kSrunTask{{"SLURM_PROCID", "4"}, {"SLURM_STEP_NUM_TASKS", "7"},
                          {"SLURM_NTASKS", "7"}, {"SLURM_LOCALID", "1"},
                          {"SLURM_NODEID", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "3,2(x2)"}};

TEST(Ranks, ReadsSlurmsVariablesWithThisNodesTaskCount) {
  Variables variables = kSrunTask;
  variables["MASTER_ADDR"] = "node-0";
  variables["MASTER_PORT"] = "29500";
  const Ranks ranks = read(variables);
  EXPECT_EQ(ranks.rank, 4);
  EXPECT_EQ(ranks.world_size, 7);
  EXPECT_EQ(ranks.local_rank, 1);
  EXPECT_EQ(ranks.local_world_size, 2);
  EXPECT_EQ(ranks.source, RankSource::slurm);
  EXPECT_STREQ(to_string(ranks.source), "slurm");
  EXPECT_EQ(ranks.master_addr, "node-0");
  EXPECT_FALSE(ranks.mpi_launcher) << "srun without --mpi=pmix starts no MPI job";
  variables["SLURM_NODEID"] = "0";
  variables["SLURM_LOCALID"] = "2";
  EXPECT_EQ(read(variables).local_world_size, 3);
}

TEST(Ranks, ABatchScriptsSlurmVariablesDescribeOneProcess) {
  // sbatch --ntasks=8 runs its script once, with SLURM_PROCID=0 and SLURM_NTASKS=8 but no step variables.
  const Ranks ranks = read({{"SLURM_PROCID", "0"},
                            {"SLURM_NTASKS", "8"},
                            {"SLURM_LOCALID", "0"},
                            {"SLURM_NODEID", "0"},
                            {"SLURM_TASKS_PER_NODE", "8"}});
  EXPECT_EQ(ranks, Ranks{});
}

TEST(Ranks, ALauncherStartedInsideASlurmStepWins) {
  // torchrun (or mpirun) started by srun: one per node, each with its own workers; the workers inherit the
  // step's variables, which describe the launcher, not them.
  Variables variables = kSrunTask;
  variables["RANK"] = "9";
  variables["WORLD_SIZE"] = "12";
  const Ranks ranks = read(variables);
  EXPECT_EQ(ranks.rank, 9);
  EXPECT_EQ(ranks.world_size, 12);
  EXPECT_EQ(ranks.source, RankSource::torchrun);
  variables = kSrunTask;
  variables["OMPI_COMM_WORLD_RANK"] = "0";
  variables["OMPI_COMM_WORLD_SIZE"] = "2";
  EXPECT_EQ(read(variables).source, RankSource::open_mpi);
}

TEST(Ranks, RejectsABadSlurmTaskList) {
  for (const std::string bad : {"", "3,", "2(x)", "2(x2", "0", "2(x0)", "a", "3,2(x2))"}) {
    Variables variables = kSrunTask;
    variables["SLURM_STEP_TASKS_PER_NODE"] = bad;
    EXPECT_NE(error_of(variables).find("SLURM_STEP_TASKS_PER_NODE='" + bad + "' is not a list"),
              std::string::npos)
        << "'" << bad << "': " << error_of(variables);
  }
  Variables variables = kSrunTask;
  variables["SLURM_NODEID"] = "3";
  EXPECT_NE(error_of(variables).find("SLURM_NODEID=3 has no entry in SLURM_STEP_TASKS_PER_NODE='3,2(x2)'"),
            std::string::npos)
      << error_of(variables);
  variables = kSrunTask;
  variables.erase("SLURM_NODEID");
  EXPECT_NE(error_of(variables).find("SLURM_STEP_TASKS_PER_NODE is set but SLURM_NODEID is not"),
            std::string::npos);
  variables = kSrunTask;
  variables["SLURM_LOCALID"] = "2";  // node 1 runs two tasks
  EXPECT_NE(error_of(variables).find("SLURM_LOCALID=2 is not below SLURM_STEP_TASKS_PER_NODE=2"),
            std::string::npos)
      << error_of(variables);
}

TEST(Ranks, KnowsWhenAnMpiLauncherWaitsForTheProcess) {
  EXPECT_TRUE(read({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}).mpi_launcher);
  Variables pmix = kSrunTask;  // srun --mpi=pmix
  pmix["PMIX_RANK"] = "4";
  EXPECT_TRUE(read(pmix).mpi_launcher);
  EXPECT_FALSE(read({{"RANK", "0"}, {"WORLD_SIZE", "2"}}).mpi_launcher);
  EXPECT_FALSE(read({}).mpi_launcher);
}

TEST(Ranks, ProcessEnvironmentReadsTheRealEnvironment) {
  ::setenv("CONVEYOR_RANKS_TEST_VARIABLE", "value", 1);
  const Environment environment = process_environment();
  EXPECT_EQ(environment("CONVEYOR_RANKS_TEST_VARIABLE"), std::optional<std::string>("value"));
  ::unsetenv("CONVEYOR_RANKS_TEST_VARIABLE");
  EXPECT_EQ(environment("CONVEYOR_RANKS_TEST_VARIABLE"), std::nullopt);
}

}  // namespace
}  // namespace conveyor
