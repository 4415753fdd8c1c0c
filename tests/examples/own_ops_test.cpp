// The examples of ops of the user's own: own_geometric_op (a geometric op written with ops::apply_geometry)
// moves a COCO set's boxes with the image and keeps them in the picture; gpu_twin (a pixel op with a CUDA
// twin) gives the images of the same op run on the CPU, wherever it is placed (without a GPU: the CPU). The
// data: make_fields over small test photos.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "support/subprocess.h"
#include "support/temp_dir.h"
#include "support/test_images.h"

namespace conveyor {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

testing::ProcessResult run(const std::vector<std::string>& args) {
  return testing::run_process(args, {}, std::chrono::seconds(120));
}

class OwnOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 6; ++i)
        testing::write_file(
            dir_->path() / "photos" / ("class_" + std::to_string(c)) / (std::to_string(i) + ".jpg"),
            testing::make_jpeg(90, 120, 3, static_cast<std::uint64_t>(c * 10 + i)));
    const testing::ProcessResult made = run(
        {testing::program_path("CONVEYOR_MAKE_FIELDS", CONVEYOR_MAKE_FIELDS), "--input",
         (dir_->path() / "photos").string(), "--out", (dir_->path() / "fields").string(), "--threads", "1"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  static fs::path at(const std::string& name) { return dir_->path() / name; }
  static TempDir* dir_;
};

TempDir* OwnOps::dir_ = nullptr;

TEST_F(OwnOps, AUsersGeometricOpMovesTheBoxesAndKeepsThemInThePicture) {
  const testing::ProcessResult shown =
      run({testing::program_path("CONVEYOR_OWN_GEOMETRIC_OP", CONVEYOR_OWN_GEOMETRIC_OP), "--annotations",
           at("fields/instances.json").string(), "--images", at("fields/images").string(), "--count", "6"});
  ASSERT_EQ(shown.exit_code, 0) << shown.out << shown.err;
  EXPECT_NE(shown.out.find("sample 5: boxes"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("6 samples, 0 boxes outside the picture"), std::string::npos) << shown.out;
}

TEST_F(OwnOps, AUsersPixelOpWithAGpuTwinGivesTheImagesOfTheOpOnTheCpu) {
  const testing::ProcessResult shown =
      run({testing::program_path("CONVEYOR_GPU_TWIN", CONVEYOR_GPU_TWIN), "--data", at("photos").string(),
           "--batches", "3", "--batch", "4"});
  ASSERT_EQ(shown.exit_code, 0) << shown.out << shown.err;
  EXPECT_NE(shown.out.find("images equal to the all-CPU chain's in 3 of 3"), std::string::npos) << shown.out;
}

}  // namespace
}  // namespace conveyor
