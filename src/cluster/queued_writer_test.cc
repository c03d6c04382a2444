#include "cluster/queued_writer.h"

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace weir::cluster {
namespace {

// A stream whose first write blocks until released, so the test can queue
// messages behind a write in progress.
class HeldStream {
 public:
  bool write(const std::string& m) {
    absl::MutexLock lock(&mu_);
    written_.push_back(m);
    if (written_.size() == 1) mu_.Await(absl::Condition(&released_));
    return m != "break";
  }
  void wait_for_first_write() {
    absl::MutexLock lock(&mu_);
    ASSERT_TRUE(mu_.AwaitWithTimeout(
        absl::Condition(+[](std::vector<std::string>* w) { return !w->empty(); }, &written_), absl::Seconds(30)));
  }
  void release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
  }
  std::vector<std::string> written() {
    absl::MutexLock lock(&mu_);
    return written_;
  }

 private:
  absl::Mutex mu_;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> written_ ABSL_GUARDED_BY(mu_);
};

TEST(QueuedWriterTest, UrgentMessagesOvertakeQueuedOnesButNotTheOneBeingWritten) {
  HeldStream stream;
  QueuedWriter<std::string> writer([&](const std::string& m) { return stream.write(m); });
  writer.send("deploy-1");
  stream.wait_for_first_write();
  writer.send("deploy-2");
  writer.send("deploy-3");
  writer.send_urgent("heartbeat-1");
  writer.send_urgent("heartbeat-2");
  stream.release();
  writer.close();
  EXPECT_EQ(stream.written(),
            (std::vector<std::string>{"deploy-1", "heartbeat-1", "heartbeat-2", "deploy-2", "deploy-3"}));
}

TEST(QueuedWriterTest, CloseWritesWhatIsQueuedAndABrokenStreamDropsTheRest) {
  HeldStream stream;
  QueuedWriter<std::string> writer([&](const std::string& m) { return stream.write(m); });
  writer.send("first");
  stream.wait_for_first_write();
  writer.send("second");
  writer.send("break");
  writer.send("after-break");
  stream.release();
  writer.close();
  writer.send("after-close");
  EXPECT_EQ(stream.written(), (std::vector<std::string>{"first", "second", "break"}));
}

}  // namespace
}  // namespace weir::cluster
