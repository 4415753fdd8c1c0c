#include <gtest/gtest.h>

#include <string>

#include "conveyor/cuda/device.h"
#include "conveyor/error.h"

namespace conveyor {
namespace {

TEST(DeviceSpec, ParsesTheFourSpellings) {
  EXPECT_EQ(DeviceSpec::parse("auto"), (DeviceSpec{DeviceSpec::Kind::automatic, 0}));
  EXPECT_EQ(DeviceSpec::parse("cpu"), (DeviceSpec{DeviceSpec::Kind::cpu, 0}));
  EXPECT_EQ(DeviceSpec::parse("gpu"), (DeviceSpec{DeviceSpec::Kind::gpu, 0}));
  EXPECT_EQ(DeviceSpec::parse("gpu:0"), (DeviceSpec{DeviceSpec::Kind::gpu, 0}));
  EXPECT_EQ(DeviceSpec::parse("gpu:7"), (DeviceSpec{DeviceSpec::Kind::gpu, 7}));
  EXPECT_EQ(DeviceSpec::parse("gpu:12"), (DeviceSpec{DeviceSpec::Kind::gpu, 12}));
}

TEST(DeviceSpec, ToStringParsesBackToTheSameSpec) {
  for (const char* text : {"auto", "cpu", "gpu", "gpu:3"}) {
    const DeviceSpec spec = DeviceSpec::parse(text);
    EXPECT_EQ(DeviceSpec::parse(spec.to_string()), spec) << text;
  }
  EXPECT_EQ(DeviceSpec::parse("gpu").to_string(), "gpu:0");
}

TEST(DeviceSpec, RejectsAnythingElseNamingTheAcceptedSpellings) {
  for (const char* text : {"", "GPU", "Cpu", "gpu:", "gpu:-1", "gpu:x", "gpu:1x", "gpu:0:1", "gpu: 1",
                           "cuda:0", " cpu", "cpu ", "cpu:0", "tpu", "gpu:99999999999"}) {
    try {
      DeviceSpec::parse(text);
      ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const InvalidArgument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("'" + std::string(text) + "'"), std::string::npos) << message;
      EXPECT_NE(message.find("gpu:N"), std::string::npos) << message;
    }
  }
}

TEST(CpuInfo, CountsCoresAndNamesTheModel) {
  const CpuInfo cpu = cpu_info();
  EXPECT_GE(cpu.logical_cores, 1u);
  EXPECT_GE(cpu.usable_cores, 1u);
  EXPECT_LE(cpu.usable_cores, cpu.logical_cores);
  EXPECT_FALSE(cpu.model.empty());
}

}  // namespace
}  // namespace conveyor
