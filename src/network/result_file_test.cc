#include "network/result_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "network/partition_writer.h"
#include "testing/seed.h"

namespace weir::network {
namespace {

namespace fs = std::filesystem;

class ResultFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("weir-result-file-test-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

// Records written through a ResultPartition into files come back, in order
// and with the events between them, from the readers; buffers of any size
// (partly filled ones merged, big ones split over frames) keep records whole.
TEST_F(ResultFileTest, RecordsAndEventsComeBackInOrder) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  NetworkBufferPool pool(8, 4096);
  std::atomic<bool> cancelled{false};
  std::vector<std::shared_ptr<ChannelWriter>> files;
  for (int c = 0; c < 2; ++c) {
    auto w = ResultFileWriter::create(result_file_path(dir_, 3, 1, c), /*durable=*/c == 1);
    ASSERT_TRUE(w.ok()) << w.status();
    files.push_back(*w);
  }
  ResultPartition partition(files, &pool, &cancelled);
  std::vector<std::vector<std::string>> expected(2);
  for (int i = 0; i < 3000; ++i) {
    const int c = static_cast<int>(rng() % 2);
    // Mostly small records, some far larger than a frame.
    const size_t size = rng() % 50 == 0 ? 300'000 + rng() % 100'000 : rng() % 200;
    std::string record(size, static_cast<char>('a' + i % 26));
    record += std::to_string(i);
    partition.emit(c, record);
    expected[c].push_back(record);
    if (i % 500 == 0) partition.flush_all();  // partly filled buffers
    if (i == 1500) {
      partition.broadcast_watermark(77);
      for (auto& e : expected) e.push_back("<watermark 77>");
    }
  }
  partition.broadcast_event(EventKind::kEndOfData);
  for (int c = 0; c < 2; ++c) {
    const std::string path = result_file_path(dir_, 3, 1, c);
    EXPECT_TRUE(fs::exists(path));
    EXPECT_FALSE(fs::exists(path + ".inprogress"));
    auto reader = ResultFileReader::open(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    RecordDeserializer deserializer;
    std::vector<std::string> got;
    bool ended = false;
    while (auto ev = (*reader)->poll()) {
      ASSERT_FALSE(ended) << "an event after end-of-data";
      switch (ev->kind) {
        case EventKind::kBuffer:
          ASSERT_TRUE(deserializer.feed(ev->buffer, [&](std::string_view r) {
            got.emplace_back(r);
            return true;
          }));
          break;
        case EventKind::kWatermark: got.push_back("<watermark " + std::to_string(ev->timestamp_ms) + ">"); break;
        case EventKind::kEndOfData: ended = true; break;
        default: FAIL() << "unexpected event " << static_cast<int>(ev->kind);
      }
    }
    EXPECT_TRUE(ended);
    EXPECT_FALSE(deserializer.has_partial());
    EXPECT_EQ(got, expected[c]) << "subpartition " << c;
  }
  EXPECT_EQ(pool.available(), 8) << "buffers kept after they were written";
}

TEST_F(ResultFileTest, AnUnfinishedFileIsRemovedAndAMissingOneIsNamed) {
  {
    auto w = ResultFileWriter::create(result_file_path(dir_, 0, 0, 0), false);
    ASSERT_TRUE(w.ok()) << w.status();
    ChannelEvent ev;
    ev.kind = EventKind::kWatermark;
    ASSERT_TRUE((*w)->push(std::move(ev)));
    (*w)->close();  // the producer failed
  }
  EXPECT_TRUE(fs::is_empty(dir_));
  auto r = ResultFileReader::open(result_file_path(dir_, 0, 0, 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find(result_file_path(dir_, 0, 0, 0)), std::string::npos) << r.status();
}

TEST_F(ResultFileTest, TruncatedAndCorruptFilesFailNamingTheFile) {
  const std::string path = result_file_path(dir_, 0, 0, 0);
  {
    auto w = ResultFileWriter::create(path, false);
    ASSERT_TRUE(w.ok());
    NetworkBufferPool pool(1, 1024);
    std::atomic<bool> cancelled{false};
    Buffer b = pool.request(cancelled);
    b.set_size(1000);
    ChannelEvent data;
    data.buffer = std::move(b);
    ASSERT_TRUE((*w)->push(std::move(data)));
    ChannelEvent end;
    end.kind = EventKind::kEndOfData;
    ASSERT_TRUE((*w)->push(std::move(end)));
  }
  const auto size = fs::file_size(path);
  auto expect_error = [&](const std::string& what) {
    auto r = ResultFileReader::open(path);
    ASSERT_TRUE(r.ok());
    try {
      while ((*r)->poll()) {
      }
      ADD_FAILURE() << "no error for a file that is " << what;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fs::resize_file(path, size - 30);  // end-of-data and part of the data gone
  expect_error("truncated");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.put(static_cast<char>(9));  // no such event kind
  }
  expect_error("corrupt");
  fs::resize_file(path, 0);
  expect_error("ends without end-of-data");
}

}  // namespace
}  // namespace weir::network
