#include "cli/job_settings.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/process.h"

namespace weir::cli {
namespace {

using Args = std::vector<std::string>;

TEST(JobSettingsTest, TakesEverySpellingOfDOutOfTheArguments) {
  Args args = {"--input", "f", "-D", "parallelism.default=4", "-Dstate.backend.type=rocksdb", "--output", "o"};
  JobSettings settings;
  ASSERT_TRUE(take_settings(&args, &settings).ok());
  EXPECT_EQ(args, (Args{"--input", "f", "--output", "o"}));
  EXPECT_EQ(settings, (JobSettings{{"parallelism.default", "4"}, {"state.backend.type", "rocksdb"}}));
  for (Args bad : {Args{"-D"}, Args{"-D", "parallelism.default"}, Args{"-D=4"}}) {
    JobSettings s;
    EXPECT_FALSE(take_settings(&bad, &s).ok()) << bad.back();
  }
}

TEST(JobSettingsTest, FlinkKeysAndValuesBecomeJobFlags) {
  auto flags = settings_as_flags({{"parallelism.default", "4"},
                                  {"execution.checkpointing.interval", "30 s"},
                                  {"execution.checkpointing.mode", "AT_LEAST_ONCE"},
                                  {"execution.checkpointing.unaligned.enabled", "true"},
                                  {"state.checkpoints.dir", "file:///var/chk"},
                                  {"state.backend.type", "hashmap"},
                                  {"state.backend.incremental", "true"},
                                  {"state.backend.changelog.enabled", "true"},
                                  {"state.backend.changelog.periodic-materialize.interval", "5 min"},
                                  {"state.backend.local-recovery", "false"},
                                  {"restart-strategy.type", "failurerate"},
                                  {"restart-strategy.fixed-delay.delay", "250"},
                                  {"jobmanager.execution.failover-strategy", "full"},
                                  {"execution.runtime-mode", "BATCH"}},
                                 {});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(*flags, (Args{"--parallelism", "4", "--checkpoint-interval", "30 s", "--mode", "at-least-once",
                          "--checkpointing", "unaligned", "--checkpoint-dir", "/var/chk", "--state", "heap", "--incremental", "--changelog",
                          "--changelog-materialize-interval", "5 min", "--no-local-recovery",
                          "--restart-strategy", "failure-rate", "--restart-delay", "250ms", "--failover", "full",
                          "--runtime-mode", "batch"}));
}

TEST(JobSettingsTest, AnExplicitFlagWinsAndTheLastSettingOfAFlagWins) {
  auto flags = settings_as_flags({{"parallelism.default", "4"},
                                  {"state.checkpoints.dir", "/a"},
                                  {"execution.checkpointing.dir", "/b"},
                                  {"execution.checkpointing.interval", "1s"}},
                                 {"-p", "2", "--checkpoint-interval=5s"});
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(*flags, (Args{"--checkpoint-dir", "/b"}));
  // A boolean that leaves the default as it is adds nothing.
  auto none = settings_as_flags({{"state.backend.incremental", "false"}, {"state.backend.local-recovery", "true"}}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(JobSettingsTest, UnknownKeysAndBadValuesAreNamed) {
  struct Case {
    std::string key, value, message;
  };
  for (const Case& c : {Case{"parallelism.defualt", "4", "unknown job setting 'parallelism.defualt' (known: "},
                        Case{"parallelism.default", "four", "job setting parallelism.default=four: expected a whole"},
                        Case{"execution.checkpointing.interval", "soon", "expected a duration"},
                        Case{"state.backend.type", "memory", "expected hashmap | heap | rocksdb"},
                        Case{"state.checkpoints.dir", "s3://bucket/chk", "expected a local path or file:// URI"},
                        Case{"state.backend.incremental", "yes", "expected true or false"}}) {
    auto flags = settings_as_flags({{c.key, c.value}}, {});
    ASSERT_FALSE(flags.ok()) << c.key;
    EXPECT_NE(flags.status().message().find(c.message), std::string::npos) << flags.status();
  }
}

TEST(JobSettingsTest, TheConfigFilesJobSectionComesFirstThenD) {
  testing::TempDir dir("job-settings");
  const std::string path = dir.path("weir.toml");
  std::ofstream(path) << "secret-file = \"/s\"\n[client]\njobmanager = \"h:1\"\n[job]\n"
                         "parallelism.default = 3\n\"state.backend.type\" = \"rocksdb\"\n"
                         "execution.checkpointing.interval = \"10 s\"\n";
  auto settings = config_job_settings(path);
  ASSERT_TRUE(settings.ok()) << settings.status();
  EXPECT_EQ(*settings, (JobSettings{{"parallelism.default", "3"},
                                    {"state.backend.type", "rocksdb"},
                                    {"execution.checkpointing.interval", "10 s"}}));
  auto args = with_job_settings({"--input", "f", "-D", "parallelism.default=5", "--checkpoint-interval", "1s"}, path);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(*args, (Args{"--state", "rocksdb", "--parallelism", "5", "--input", "f", "--checkpoint-interval", "1s"}));
  auto missing = with_job_settings({}, dir.path("none.toml"));
  EXPECT_FALSE(missing.ok());
  std::ofstream(path, std::ios::trunc) << "[job]\nstate.backend.kind = \"heap\"\n";
  auto bad = with_job_settings({}, path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown job setting 'state.backend.kind'"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("config file " + path), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace weir::cli
