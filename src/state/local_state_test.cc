// The local snapshot copies of local recovery: what counts as intact, and
// what a confirmed checkpoint deletes.
#include "state/local_state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace weir::state {
namespace {

namespace fs = std::filesystem;

class LocalStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("weir-local-state-test-" + std::to_string(::getpid())) / "local";
    fs::remove_all(root_.parent_path());
  }
  void TearDown() override { fs::remove_all(root_.parent_path()); }

  // Writes a copy with files of the given sizes, as a snapshot would.
  void make_copy(LocalStateStore& store, const std::string& owner, int64_t id, std::vector<size_t> sizes) {
    fs::path d = store.directory_for(owner, id);
    fs::create_directories(d);
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::ofstream(d / ("f" + std::to_string(i) + ".sst")) << std::string(sizes[i], 'x');
    }
    store.put(owner, id, kRange);
  }

  const KeyGroupRange kRange{0, 64};
  fs::path root_;
};

TEST_F(LocalStateTest, FindsAnIntactCopyOnlyForTheSameCheckpointRangeAndFiles) {
  LocalStateStore store(root_);
  make_copy(store, "op-0", 5, {10, 20, 30});
  auto files = store.find("op-0", 5, kRange, {30, 10, 20});
  ASSERT_TRUE(files.has_value());
  EXPECT_EQ(files->size(), 3u);
  for (const auto& f : *files) EXPECT_TRUE(fs::exists(f)) << f;
  EXPECT_FALSE(store.find("op-0", 4, kRange, {10, 20, 30}).has_value());       // another checkpoint
  EXPECT_FALSE(store.find("op-1", 5, kRange, {10, 20, 30}).has_value());       // another owner
  EXPECT_FALSE(store.find("op-0", 5, {0, 32}, {10, 20, 30}).has_value());      // another range
  EXPECT_FALSE(store.find("op-0", 5, kRange, {10, 20}).has_value());           // not what the metadata lists
  EXPECT_FALSE(store.find("op-0", 5, kRange, {10, 20, 31}).has_value());
}

TEST_F(LocalStateTest, AMissingOrResizedFileMakesTheCopyUnusable) {
  LocalStateStore store(root_);
  make_copy(store, "a", 1, {10, 20});
  make_copy(store, "b", 1, {10, 20});
  fs::remove(store.directory_for("a", 1) / "f0.sst");
  EXPECT_FALSE(store.find("a", 1, kRange, {10, 20}).has_value());
  fs::resize_file(store.directory_for("b", 1) / "f1.sst", 5);
  EXPECT_FALSE(store.find("b", 1, kRange, {10, 20}).has_value());
}

TEST_F(LocalStateTest, ConfirmingACheckpointDeletesOlderCopiesAndTheStoreDeletesTheRest) {
  {
    LocalStateStore store(root_);
    make_copy(store, "op-0", 1, {1});
    make_copy(store, "op-0", 2, {2});
    make_copy(store, "op-0", 3, {3});
    store.confirm(2);
    EXPECT_FALSE(fs::exists(store.directory_for("op-0", 1)));
    EXPECT_FALSE(store.find("op-0", 1, kRange, {1}).has_value());
    EXPECT_TRUE(store.find("op-0", 2, kRange, {2}).has_value());
    EXPECT_TRUE(store.find("op-0", 3, kRange, {3}).has_value());  // pending, newer
  }
  EXPECT_FALSE(fs::exists(root_));
}

}  // namespace
}  // namespace weir::state
