// The job flags' defaults are JobConfig's: a job run without flags gets
// exactly the configuration weir/config.h documents.
#include "cli/jobs.h"
#include "cli/suggest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace weir::cli {
namespace {

TEST(JobFlagsTest, WithoutFlagsAJobGetsJobConfigsDefaults) {
  auto got = JobFlags{}.to_config();
  ASSERT_TRUE(got.ok()) << got.status();
  const JobConfig want;
  EXPECT_EQ(got->default_parallelism, want.default_parallelism);
  EXPECT_EQ(got->max_parallelism, want.max_parallelism);
  EXPECT_EQ(got->checkpoint.interval, want.checkpoint.interval);
  EXPECT_EQ(got->checkpoint.mode, want.checkpoint.mode);
  EXPECT_EQ(got->checkpoint.directory, want.checkpoint.directory);
  EXPECT_EQ(got->checkpoint.incremental, want.checkpoint.incremental);
  EXPECT_EQ(got->checkpoint.changelog, want.checkpoint.changelog);
  EXPECT_EQ(got->checkpoint.changelog_materialize_interval, want.checkpoint.changelog_materialize_interval);
  EXPECT_EQ(got->checkpoint.retained, want.checkpoint.retained);
  EXPECT_EQ(got->checkpoint.tolerable_failed_checkpoints, want.checkpoint.tolerable_failed_checkpoints);
  EXPECT_EQ(got->state.kind, want.state.kind);
  EXPECT_EQ(got->state.local_directory, want.state.local_directory);
  EXPECT_EQ(got->state.local_recovery, want.state.local_recovery);
  EXPECT_EQ(got->restart.kind, want.restart.kind);
  EXPECT_EQ(got->restart.max_attempts, want.restart.max_attempts);
  EXPECT_EQ(got->restart.delay, want.restart.delay);
  EXPECT_EQ(got->restart.max_failures_without_progress, want.restart.max_failures_without_progress);
  EXPECT_EQ(got->restart.max_failures_per_interval, want.restart.max_failures_per_interval);
  EXPECT_EQ(got->restart.failure_rate_interval, want.restart.failure_rate_interval);
  EXPECT_EQ(got->failover, want.failover);
  EXPECT_EQ(got->exchange, want.exchange);
  EXPECT_EQ(got->runtime_mode, want.runtime_mode);
  EXPECT_EQ(got->result_directory, want.result_directory);
  EXPECT_EQ(got->slot_timeout, want.slot_timeout);
  EXPECT_EQ(got->restore, want.restore);
  EXPECT_EQ(got->allow_non_restored_state, want.allow_non_restored_state);
}

TEST(JobFlagsTest, AChangelogMaterializeIntervalMustBeAPositiveDuration) {
  for (const char* bad : {"0ms", "5parsecs", ""}) {
    JobFlags f;
    f.changelog_interval = bad;
    auto got = f.to_config();
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_NE(got.status().message().find("--changelog-materialize-interval"), std::string::npos) << got.status();
  }
  JobFlags f;
  f.changelog = true;
  f.changelog_interval = "90s";
  auto got = f.to_config();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->checkpoint.changelog);
  EXPECT_EQ(got->checkpoint.changelog_materialize_interval, Duration(90000));
}

TEST(JobFlagsTest, DurationsFormatInTheirLargestWholeUnitAndParseBack) {
  for (int64_t ms : {0, 1, 5, 100, 999, 1000, 1500, 60000, 90000, 600000, 3600000}) {
    const Duration d(ms);
    auto back = parse_duration(format_duration(d));
    ASSERT_TRUE(back.ok()) << format_duration(d);
    EXPECT_EQ(*back, d) << format_duration(d);
  }
  EXPECT_EQ(format_duration(Duration(100)), "100ms");
  EXPECT_EQ(format_duration(Duration(1000)), "1s");
  EXPECT_EQ(format_duration(Duration(600000)), "10min");
  EXPECT_EQ(format_duration(Duration(90000)), "90s");
}

// Durations as Flink writes them, and sums of them; what is not one is
// refused naming why.
TEST(JobFlagsTest, DurationsParseAsFlinkWritesThem) {
  const std::vector<std::pair<std::string, int64_t>> good = {
      {"250", 250},          {"250ms", 250},      {"1.5s", 1500},      {"1 min", 60000},
      {"1h30m", 5400000},    {"1 min 30 s", 90000}, {"2 Seconds", 2000}, {"0.25h", 900000},
      {"1d", 86400000},      {" 3 hours ", 10800000}, {"10millis", 10},  {"0s", 0}};
  for (const auto& [text, ms] : good) {
    auto d = parse_duration(text);
    ASSERT_TRUE(d.ok()) << text << ": " << d.status();
    EXPECT_EQ(d->count(), ms) << text;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "expected a number"},         {"soon", "expected a number"},   {"-5s", "expected a number"},
      {"5 parsecs", "unknown unit 'parsecs'"}, {"1.5ms", "finer than a millisecond"},
      {"1h 30", "a number without a unit"},    {"200 years", "unknown unit"},
      {"1000000d", "more than 100 years"},     {"1..5s", "expected a number"}};
  for (const auto& [text, why] : bad) {
    auto d = parse_duration(text);
    ASSERT_FALSE(d.ok()) << text << " parsed as " << d->count() << " ms";
    EXPECT_NE(d.status().message().find("invalid duration '" + text + "': " + why), std::string::npos)
        << d.status();
  }
}

// A SQL script's SET of a job setting's key configures its job, on the
// cluster's path (the built-in job sql) as embedded; a flag on the command
// line wins over it; a bad value or an unknown key is the SET's error.
TEST(SqlJobSettingsTest, ScriptSetsConfigureTheJobUnlessAFlagIsGiven) {
  const std::string script =
      "SET 'parallelism.default' = '3';\n"
      "SET 'execution.checkpointing.interval' = '250 ms';\n"
      "SET 'state.backend.type' = 'rocksdb';\n"
      "SET 'table.exec.mini-batch.size' = '10';\n"
      "RESET 'state.backend.type';\n"
      "CREATE TABLE t (a BIGINT) WITH ('connector' = 'values', 'rows' = '1');\n"
      "CREATE TABLE o (a BIGINT) WITH ('connector' = 'blackhole');\n"
      "INSERT INTO o SELECT a FROM t;\n";
  const auto settings = sql_job_settings(script);
  ASSERT_EQ(settings.size(), 2u);
  EXPECT_EQ(settings[0], (std::pair<std::string, std::string>{"parallelism.default", "3"}));
  EXPECT_EQ(settings[1], (std::pair<std::string, std::string>{"execution.checkpointing.interval", "250 ms"}));

  auto env = build_job("sql", {"--script", script});
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ((*env)->config().default_parallelism, 3);
  EXPECT_EQ((*env)->config().checkpoint.interval, std::chrono::milliseconds(250));
  EXPECT_EQ((*env)->config().state.kind, JobConfig{}.state.kind);  // RESET

  auto given = build_job("sql", {"--script", script, "-p", "2"});
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ((*given)->config().default_parallelism, 2);
  EXPECT_EQ((*given)->config().checkpoint.interval, std::chrono::milliseconds(250));

  auto bad = build_job("sql", {"--script", "SET 'parallelism.default' = 'many';\n" + script});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 1, column 5: SET 'parallelism.default': job setting "
                                        "parallelism.default=many: expected a whole number"),
            std::string::npos)
      << bad.status();
  auto unknown = build_job("sql", {"--script", "SET 'execution.checkpointing.intervall' = '1s';\n" + script});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown setting 'execution.checkpointing.intervall' (did you mean "
                                            "'execution.checkpointing.interval'?)"),
            std::string::npos)
      << unknown.status();
}

}  // namespace
}  // namespace weir::cli

namespace weir::cli {
namespace {

// A misspelled option is named with the nearest one the command has.
TEST(ParseErrorTest, AMisspelledOptionGetsTheNearestAsASuggestion) {
  CLI::App app("test");
  std::string dir, interval;
  int slots = 0;
  CLI::App* run = app.add_subcommand("run", "a job");
  run->add_option("--checkpoint-dir", dir);
  run->add_option("--checkpoint-interval", interval);
  run->add_option("--slots", slots);
  auto message = [&](std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return parse_error_message(e, app);
    }
    return std::string("parsed");
  };
  EXPECT_EQ(message({"run", "--chekpoint-dir", "/tmp"}),
            "The following arguments were not expected: /tmp --chekpoint-dir (did you mean --checkpoint-dir?)");
  EXPECT_EQ(message({"run", "--slotz=3"}), "The following argument was not expected: --slotz=3 (did you mean --slots?)");
  // Nothing near: the message as it was.
  EXPECT_EQ(message({"run", "--parallelism", "2"}), "The following arguments were not expected: 2 --parallelism");
  EXPECT_EQ(nearest("--checkpoint", {"--checkpoint-dir", "--slots"}), "--checkpoint-dir");  // 4 edits: a third of 12
  EXPECT_EQ(nearest("--cp", {"--checkpoint-dir", "--slots"}), "");
  EXPECT_EQ(nearest("--savepont-dir", {"--checkpoint-dir", "--savepoint-dir"}), "--savepoint-dir");
}

}  // namespace
}  // namespace weir::cli
