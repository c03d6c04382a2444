#include "weir/job_args.h"

#include <gtest/gtest.h>

namespace weir {
namespace {

TEST(JobArgsTest, ReadsValuesFlagsAndDefaults) {
  JobArgs args({"--input", "in.txt", "--rate=500", "--verbose", "--window", "1.5s", "--name=a=b"});
  EXPECT_EQ(args.required("input", "what to read"), "in.txt");
  EXPECT_EQ(args.get_int("rate", "lines/s", 0, 0), 500);
  EXPECT_TRUE(args.flag("verbose", "say more"));
  EXPECT_FALSE(args.flag("quiet", "say less"));
  EXPECT_EQ(args.get_duration("window", "window size", Duration(1000)), Duration(1500));
  EXPECT_EQ(args.get_duration("gap", "session gap", Duration(60000)), Duration(60000));
  EXPECT_EQ(args.get("name", "a name"), "a=b");
  EXPECT_EQ(args.get("output", "where", "out"), "out");
  EXPECT_TRUE(args.has("rate"));
  EXPECT_FALSE(args.has("output"));
  EXPECT_TRUE(args.status().ok()) << args.status();
  const std::string usage = args.usage();
  EXPECT_NE(usage.find("  --input VALUE"), std::string::npos) << usage;
  EXPECT_NE(usage.find("what to read (required)"), std::string::npos) << usage;
  EXPECT_NE(usage.find("  --rate N"), std::string::npos) << usage;
  EXPECT_NE(usage.find("lines/s (default: 0)"), std::string::npos) << usage;
  EXPECT_NE(usage.find("  --gap DURATION"), std::string::npos) << usage;
  EXPECT_NE(usage.find("session gap (default: 1min)"), std::string::npos) << usage;
  EXPECT_NE(usage.find("  --output VALUE"), std::string::npos) << usage;
  EXPECT_NE(usage.find("where (default: out)"), std::string::npos) << usage;
}

TEST(JobArgsTest, TheFirstProblemIsNamed) {
  auto first_error = [](const std::vector<std::string>& argv) {
    JobArgs args(argv);
    args.required("input", "what to read");
    args.get_int("rate", "lines/s", 0, 0, 1000000);
    args.get_duration("window", "window size", Duration(1000));
    args.flag("verbose", "say more");
    return std::string(args.status().message());
  };
  EXPECT_EQ(first_error({"--rate", "5"}), "--input is required: what to read");
  EXPECT_EQ(first_error({"--input", "x", "--rate", "fast"}), "--rate wants a whole number, not 'fast'");
  EXPECT_EQ(first_error({"--input", "x", "--rate", "-1"}), "--rate -1 is out of range [0, 1000000]");
  EXPECT_EQ(first_error({"--input", "x", "--window", "soon"}).rfind("--window: invalid duration 'soon'", 0), 0u)
      << first_error({"--input", "x", "--window", "soon"});
  EXPECT_EQ(first_error({"--input", "x", "--verbose", "very"}),
            "--verbose takes no value (or =true, =false), not 'very'");
  EXPECT_EQ(first_error({"--input", "x", "--colour", "red"}),
            "unknown argument --colour (the job takes --input, --rate, --window, --verbose)");
  EXPECT_EQ(first_error({"--input", "x", "stray"}),
            "unexpected argument 'stray' (the job takes --input, --rate, --window, --verbose)");
  EXPECT_EQ(first_error({"--input", "x", "--input", "y"}), "--input is given twice");
  EXPECT_EQ(first_error({"--input", "x", "--rate"}), "--rate wants a whole number, not ''");
  EXPECT_EQ(first_error({"--input", "x", "--verbose=false"}), "");
}

}  // namespace
}  // namespace weir
