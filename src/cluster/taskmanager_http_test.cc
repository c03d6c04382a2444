#include "cluster/taskmanager_http.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace weir::cluster {
namespace {

// A file of `text`, open for reading, removed at the end.
class TextFile {
 public:
  explicit TextFile(const std::string& text) {
    char name[] = "/tmp/weir-stdout-XXXXXX";
    fd_ = ::mkstemp(name);
    path_ = name;
    append(text);
  }
  ~TextFile() {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  void append(const std::string& text) {
    EXPECT_EQ(::pwrite(fd_, text.data(), text.size(), ::lseek(fd_, 0, SEEK_END)), static_cast<ssize_t>(text.size()));
    ::lseek(fd_, 0, SEEK_END);
  }
  void truncate() { ASSERT_EQ(::ftruncate(fd_, 0), 0); }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  std::string path_;
};

nlohmann::json piece(const TextFile& f, const std::string& offset, const std::string& length) {
  auto p = stdout_piece_json(f.fd(), offset, length);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : nlohmann::json();
}

TEST(StdoutPieceTest, ATailStartsAtALineAndEndsAfterTheLastWholeOne) {
  TextFile f("first line\nsecond\nthird\npartial");
  // The last 15 bytes start inside "second": the piece starts at "third".
  nlohmann::json p = piece(f, "-15", "");
  EXPECT_EQ(p["size"], 31);
  EXPECT_EQ(p["offset"], 18);
  EXPECT_EQ(p["lines"], nlohmann::json::array({"third"}));
  EXPECT_EQ(p["end"], 24) << "the unfinished last line waits for its line break";
  // From the start: every whole line.
  p = piece(f, "0", "");
  EXPECT_EQ(p["lines"], nlohmann::json::array({"first line", "second", "third"}));
  EXPECT_EQ(p["end"], 24);
  // Following from `end` once the line is finished.
  f.append(" now whole\n");
  p = piece(f, "24", "");
  EXPECT_EQ(p["lines"], nlohmann::json::array({"partial now whole"}));
  EXPECT_EQ(p["end"], 42);
  p = piece(f, "42", "");
  EXPECT_EQ(p["lines"], nlohmann::json::array());
  EXPECT_EQ(p["end"], 42);
}

TEST(StdoutPieceTest, ALengthBoundsThePieceAndALongLineStillMovesOn) {
  TextFile f("aaaa\nbbbb\ncccccccccccccccccccc\nd\n");
  nlohmann::json p = piece(f, "0", "12");
  EXPECT_EQ(p["lines"], nlohmann::json::array({"aaaa", "bbbb"}));
  EXPECT_EQ(p["end"], 10);
  // A line longer than the piece comes in parts rather than never.
  p = piece(f, "10", "8");
  EXPECT_EQ(p["lines"], nlohmann::json::array({"cccccccc"}));
  EXPECT_EQ(p["end"], 18);
}

TEST(StdoutPieceTest, AFileThatShrankIsReadFromItsStart) {
  TextFile f("one\ntwo\nthree\n");
  f.truncate();
  f.append("new\n");
  nlohmann::json p = piece(f, "14", "");
  EXPECT_EQ(p["offset"], 0);
  EXPECT_EQ(p["lines"], nlohmann::json::array({"new"}));
}

TEST(StdoutPieceTest, MalformedArgumentsAreNamed) {
  TextFile f("x\n");
  auto bad = stdout_piece_json(f.fd(), "ten", "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "offset 'ten' is not a whole number");
  bad = stdout_piece_json(f.fd(), "", "0");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "length 0 is not between 1 and 1048576");
  bad = stdout_piece_json(f.fd(), "", "2000000");
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace weir::cluster
