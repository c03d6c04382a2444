#include "checkpoint/storage.h"
#include "checkpoint/file_storage.h"
#include "checkpoint/memory_storage.h"
#include "checkpoint/storage_scheme.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/file_util.h"

namespace fs = std::filesystem;

namespace weir::checkpoint {
namespace {

class StorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("weir-storage-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes a complete checkpoint `id` with one operator state file.
  CheckpointMetadata write_checkpoint(FileCheckpointStorage& s, int64_t id) {
    detail::OperatorSnapshot snap;
    snap.operator_state["positions"].entries = {"a", std::to_string(id)};
    CheckpointMetadata m;
    m.checkpoint_id = id;
    m.timestamp_ms = 1000 + id;
    m.job_id = "job";
    OperatorStateHandles op;
    op.uid = "source";
    op.parallelism = 1;
    op.max_parallelism = 128;
    OperatorSubtaskState h;
    h.file = "source-0.state";
    std::string bytes = encode_state_file(snap, &h);
    EXPECT_TRUE(s.write_state_file(id, h.file, bytes).ok());
    op.subtasks.push_back(h);
    m.operators.push_back(op);
    EXPECT_TRUE(s.finalize(m).ok());
    return m;
  }

  fs::path root_;
};

TEST_F(StorageTest, MetadataRoundTripsAndIsPublishedAtomically) {
  FileCheckpointStorage s(root_.string(), "job");
  CheckpointMetadata m = write_checkpoint(s, 7);
  fs::path dir = root_ / "job" / "chk-7";
  EXPECT_TRUE(fs::exists(dir / "_metadata"));
  EXPECT_FALSE(fs::exists(dir / "_metadata.tmp"));
  auto loaded = load_checkpoint(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->metadata.checkpoint_id, 7);
  ASSERT_EQ(loaded->metadata.operators.size(), 1u);
  const auto& h = loaded->metadata.operators[0].subtasks[0];
  auto bytes = s.read_state_file(loaded->location, h);
  ASSERT_TRUE(bytes.ok());
  auto state = decode_operator_state((*bytes)->bytes().substr(h.operator_state_offset, h.operator_state_length));
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->at("positions").entries, (std::vector<std::string>{"a", "7"}));
}

// A path that is no directory and a directory without _metadata get
// messages of their own (--restore /no/such/path is a typo, not damage).
TEST_F(StorageTest, AMissingAndAnIncompleteCheckpointAreToldApart) {
  const std::string missing = (root_ / "no" / "such" / "chk-3").string();
  auto none = load_checkpoint(missing);
  EXPECT_TRUE(absl::IsNotFound(none.status()));
  EXPECT_EQ(std::string(none.status().message()), missing + ": no such checkpoint directory");
  const fs::path empty = root_ / "job" / "chk-9";
  fs::create_directories(empty);
  auto incomplete = load_checkpoint(empty.string());
  EXPECT_EQ(std::string(incomplete.status().message()), empty.string() + ": incomplete checkpoint (no _metadata)");
}

TEST_F(StorageTest, CorruptStateFileIsReportedByPath) {
  FileCheckpointStorage s(root_.string(), "job");
  write_checkpoint(s, 1);
  fs::path file = root_ / "job" / "chk-1" / "source-0.state";
  std::string bytes = *read_file(file.string());
  bytes[14] ^= 0x40;
  ASSERT_TRUE(write_file_synced(file.string(), bytes).ok());
  auto loaded = load_checkpoint((root_ / "job" / "chk-1").string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find(file.string()), std::string::npos);
  EXPECT_NE(loaded.status().message().find("checksum"), std::string::npos);
}

// A subtask that needs only another subtask's operator state reads that
// section alone, checked by its own checksum: damage elsewhere in the file
// does not touch it, damage inside it is found. Without a section checksum
// (older metadata) the whole file is read and checked.
TEST_F(StorageTest, OperatorStateIsReadAloneAndCheckedByItsOwnChecksum) {
  FileCheckpointStorage s(root_.string(), "job");
  write_checkpoint(s, 1);
  auto loaded = load_checkpoint((root_ / "job" / "chk-1").string());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const OperatorSubtaskState h = loaded->metadata.operators[0].subtasks[0];
  ASSERT_TRUE(h.has_operator_state_checksum);
  const fs::path file = root_ / "job" / "chk-1" / "source-0.state";
  const std::string intact = *read_file(file.string());
  // The file's trailer (its whole checksum) damaged.
  std::string bytes = intact;
  bytes.back() ^= 0x01;
  ASSERT_TRUE(write_file_synced(file.string(), bytes).ok());
  EXPECT_FALSE(s.read_state_file(loaded->location, h).ok());
  auto section = s.read_operator_state(loaded->location, h);
  ASSERT_TRUE(section.ok()) << section.status();
  auto state = decode_operator_state((*section)->bytes());
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->at("positions").entries, (std::vector<std::string>{"a", "1"}));
  OperatorSubtaskState old = h;
  old.has_operator_state_checksum = false;
  EXPECT_FALSE(s.read_operator_state(loaded->location, old).ok()) << "an unchecked section was used";
  // A byte of the section itself damaged.
  bytes = intact;
  bytes[h.operator_state_offset + h.operator_state_length - 1] ^= 0x01;
  ASSERT_TRUE(write_file_synced(file.string(), bytes).ok());
  section = s.read_operator_state(loaded->location, h);
  ASSERT_FALSE(section.ok());
  EXPECT_NE(section.status().message().find(file.string() + ": checksum mismatch in the operator state"),
            std::string::npos)
      << section.status();
}

TEST_F(StorageTest, CorruptOrTruncatedMetadataIsRejected) {
  FileCheckpointStorage s(root_.string(), "job");
  CheckpointMetadata m = write_checkpoint(s, 1);
  std::string enc = encode_metadata(m);
  for (size_t cut : {size_t{0}, size_t{5}, enc.size() / 2, enc.size() - 1}) {
    EXPECT_FALSE(decode_metadata(enc.substr(0, cut), "m").ok()) << cut;
  }
  std::string flipped = enc;
  flipped[20] ^= 1;
  auto bad = decode_metadata(flipped, "m");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("checksum"), std::string::npos);
}

TEST_F(StorageTest, LatestSkipsIncompleteAndCorruptCheckpoints) {
  FileCheckpointStorage s(root_.string(), "job");
  write_checkpoint(s, 1);
  write_checkpoint(s, 2);
  write_checkpoint(s, 3);
  // 3: corrupt state file; 4: never completed (no metadata).
  fs::path f3 = root_ / "job" / "chk-3" / "source-0.state";
  std::string bytes = *read_file(f3.string());
  bytes[bytes.size() - 1] ^= 1;
  ASSERT_TRUE(write_file_synced(f3.string(), bytes).ok());
  ASSERT_TRUE(s.write_state_file(4, "x.state", "partial").ok());
  std::vector<std::string> skipped;
  auto latest = find_latest_checkpoint(root_.string(), &skipped);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->metadata.checkpoint_id, 2);
  ASSERT_EQ(skipped.size(), 2u);
  std::string all = skipped[0] + "\n" + skipped[1];
  EXPECT_NE(all.find("chk-4"), std::string::npos);
  EXPECT_NE(all.find("chk-3"), std::string::npos);
}

// Native files are named relative to their checkpoint; shared ones sit
// beside the checkpoints, in a directory or under an S3 prefix alike.
TEST(NativeFileLocationTest, ResolvesRelativeNamesInDirectoriesAndS3) {
  EXPECT_EQ(native_file_location("/c/job/chk-7", "op~MANIFEST-5"), "/c/job/chk-7/op~MANIFEST-5");
  EXPECT_EQ(native_file_location("/c/job/chk-7", "../shared/c3/op~000012.sst"), "/c/job/shared/c3/op~000012.sst");
  EXPECT_EQ(native_file_location("s3://b/p/job/chk-7", "op~OPTIONS-9"), "s3://b/p/job/chk-7/op~OPTIONS-9");
  EXPECT_EQ(native_file_location("s3://b/p/job/chk-7", "../shared/c3/op~000012.sst"),
            "s3://b/p/job/shared/c3/op~000012.sst");
  EXPECT_EQ(native_file_location("s3://b/job/chk-7", "./../shared/c3/x.sst"), "s3://b/job/shared/c3/x.sst");
}

TEST_F(StorageTest, DiscardRemovesTheCheckpointDirectory) {
  FileCheckpointStorage s(root_.string(), "job");
  write_checkpoint(s, 1);
  s.discard(1);
  EXPECT_FALSE(fs::exists(root_ / "job" / "chk-1"));
  std::vector<std::string> skipped;
  EXPECT_FALSE(find_latest_checkpoint(root_.string(), &skipped).ok());
}

TEST_F(StorageTest, MissingDirectoryIsAClearError) {
  std::vector<std::string> skipped;
  auto r = find_latest_checkpoint((root_ / "nope").string(), &skipped);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not exist"), std::string::npos);
}

// Every location goes to the scheme its prefix names: no checkpoint
// directory and memory:// to memory (read back only by its own job), s3://
// to S3 (remote), anything else to the file system.
TEST(StorageSchemeTest, ALocationGoesToTheSchemeItNames) {
  EXPECT_EQ(&scheme_for(""), &memory_scheme());
  EXPECT_EQ(&scheme_for("memory://job/3"), &memory_scheme());
  EXPECT_EQ(&scheme_for("s3://bucket/prefix"), &s3_scheme());
  EXPECT_EQ(&scheme_for("/var/lib/chk"), &file_scheme());
  EXPECT_EQ(&scheme_for("relative/chk"), &file_scheme());
  EXPECT_EQ(&scheme_for("s3:/not-a-url"), &file_scheme());
  EXPECT_TRUE(s3_scheme().remote());
  EXPECT_FALSE(file_scheme().remote());
  EXPECT_FALSE(memory_scheme().durable());
  EXPECT_TRUE(file_scheme().durable());
  EXPECT_FALSE(memory_scheme().at("memory://job/3").ok());
  auto memory = scheme_for("").open("", "job");
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_FALSE((*memory)->durable());
  EXPECT_EQ((*memory)->location(4), "memory://job/4");
  EXPECT_FALSE(file_scheme().download_native_files("/c/job/chk-1", OperatorSubtaskState{}, "/tmp/x").ok());
}

TEST_F(StorageTest, ASavepointDirectoryIsCreatedOnceAndNeverReused) {
  const std::string dir = (root_ / "savepoints" / "sp-1").string();
  auto first = scheme_for(dir).create_savepoint(dir);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_EQ((*first)->location(9), dir);  // every id maps to the directory itself
  auto again = scheme_for(dir).create_savepoint(dir);
  ASSERT_FALSE(again.ok());
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
  EXPECT_NE(again.status().message().find(dir), std::string::npos) << again.status();
  RoutingCheckpointStorage routing(std::make_shared<MemoryCheckpointStorage>("job"));
  EXPECT_TRUE(absl::IsAlreadyExists(routing.add_savepoint(2, dir)));
  const std::string other = (root_ / "savepoints" / "sp-2").string();
  ASSERT_TRUE(routing.add_savepoint(2, other).ok());
  EXPECT_EQ(routing.location(2), other);
  EXPECT_EQ(routing.location(3), "memory://job/3");
}

// A TaskManager that cannot open the savepoint directory the JobManager
// chose writes none of that savepoint's files, rather than among its
// checkpoints' (where the savepoint would point at files later deleted).
TEST_F(StorageTest, ASavepointThisProcessCannotOpenFailsItsFilesNamingTheDirectory) {
  RoutingCheckpointStorage routing(std::make_shared<MemoryCheckpointStorage>("job"));
  routing.route_savepoint(4, "memory://elsewhere/sp-4");
  auto file = routing.create_state_file(4, "op-0");
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("savepoint 4 at memory://elsewhere/sp-4"), std::string::npos)
      << file.status();
  auto upload = routing.upload_file(4, (root_ / "local.sst").string(), "local.sst", true);
  ASSERT_FALSE(upload.ok());
  EXPECT_NE(upload.status().message().find("savepoint 4"), std::string::npos) << upload.status();
  // Checkpoints go on as before.
  EXPECT_TRUE(routing.create_state_file(5, "op-0").ok());
  // Once the aborted savepoint is discarded, its id carries nothing over.
  routing.discard(4);
  EXPECT_TRUE(routing.create_state_file(4, "op-0").ok());
}

// A key-group snapshot of fixed blobs: what a changelog file holds.
class FixedGroups final : public detail::KeyedStateSnapshot {
 public:
  explicit FixedGroups(KeyGroupRange range) : range_(range) {}
  KeyGroupRange range() const override { return range_; }
  void write_key_group(int kg, ByteWriter& out) const override { out.put_string("group " + std::to_string(kg)); }

 private:
  const KeyGroupRange range_;
};

// Changelog files are shared files of the checkpoint that wrote them: in
// memory and in a directory they are read back verified, go with an
// aborted checkpoint, and outlive a subsumed one unless no retained
// checkpoint refers to them; the metadata lists a subtask's chain.
TEST_F(StorageTest, ChangelogFilesAreSharedFilesOfTheirCheckpoint) {
  MemoryCheckpointStorage memory("job");
  FileCheckpointStorage files(root_.string(), "job");
  for (CheckpointStorage* s : {static_cast<CheckpointStorage*>(&memory), static_cast<CheckpointStorage*>(&files)}) {
    SCOPED_TRACE(s->location(1));
    ASSERT_TRUE(s->supports_shared_files());
    std::vector<detail::ChangelogFile> chain;
    for (int64_t id : {1, 2, 3}) {
      auto out = s->create_shared_file(id, "op-0~base.state");
      ASSERT_TRUE(out.ok()) << out.status();
      detail::ChangelogFile f;
      f.path = shared_file_path(id, "op-0~base.state");
      ASSERT_TRUE(write_changelog_file(FixedGroups({4, 8}), &f, out->get()).ok());
      ASSERT_TRUE((*out)->finish().ok());
      ASSERT_EQ(f.kg_offsets.size(), 5u);
      chain.push_back(f);
    }
    EXPECT_EQ(chain[1].path, "../shared/c2/op-0~base.state");
    // Read from a later checkpoint's location: the path is relative to it.
    auto bytes = s->read_changelog_file(s->location(3), chain[0]);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    const std::string_view all = (*bytes)->bytes();
    EXPECT_NE(all.substr(chain[0].kg_offsets[2], chain[0].kg_offsets[3] - chain[0].kg_offsets[2]).find("group 6"),
              std::string_view::npos);
    // A size that does not match is refused, naming the file.
    detail::ChangelogFile wrong = chain[0];
    wrong.size += 1;
    auto refused = s->read_changelog_file(s->location(3), wrong);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("op-0~base.state"), std::string::npos) << refused.status();
    // An aborted checkpoint takes its shared files along.
    s->discard(3);
    EXPECT_FALSE(s->read_changelog_file(s->location(2), chain[2]).ok());
    // A subsumed one leaves those a retained checkpoint refers to.
    s->discard_subsumed(1, {native_file_location(s->location(1), chain[1].path)});
    EXPECT_TRUE(s->read_changelog_file(s->location(2), chain[0]).ok());
    EXPECT_FALSE(s->read_changelog_file(s->location(2), chain[1]).ok());
  }
  // A savepoint directory keeps no shared files (savepoints are canonical).
  auto savepoint = FileCheckpointStorage::at_directory((root_ / "sp").string());
  EXPECT_FALSE(savepoint->supports_shared_files());

  CheckpointMetadata m;
  m.checkpoint_id = 9;
  m.job_id = "job";
  OperatorStateHandles op;
  op.uid = "sum";
  op.parallelism = 1;
  op.max_parallelism = 8;
  OperatorSubtaskState h;
  h.file = "sum-0.state";
  h.key_groups = {0, 2};
  h.changelog = {{"../shared/c7/sum-0~base.state", 100, false, {10, 50, 90}},
                 {"../shared/c9/sum-0~delta.state", 30, true, {10, 20, 25}}};
  op.subtasks.push_back(h);
  m.operators.push_back(op);
  auto back = decode_metadata(encode_metadata(m), "test");
  ASSERT_TRUE(back.ok()) << back.status();
  const auto& chain = back->operators[0].subtasks[0].changelog;
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[1].path, "../shared/c9/sum-0~delta.state");
  EXPECT_TRUE(chain[1].delta);
  EXPECT_EQ(chain[0].kg_offsets, (std::vector<uint64_t>{10, 50, 90}));
  EXPECT_EQ(back->new_bytes(), 30u);  // the delta checkpoint 9 wrote
  // A chain that does not begin with a base is refused.
  std::swap(m.operators[0].subtasks[0].changelog[0], m.operators[0].subtasks[0].changelog[1]);
  auto bad = decode_metadata(encode_metadata(m), "test");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("does not begin with a base"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace weir::checkpoint
