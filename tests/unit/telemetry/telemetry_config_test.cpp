// telemetry_config_test.cpp: telemetry.interval as the configuration reads it, and where the
// node's lock file goes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "config/config.hpp"
#include "dftrace/dftrace.h"
#include "runtime/telemetry_sampler.hpp"

using namespace dftrace::detail;

namespace {

config load_with(const char *env_value, const std::string &yaml_file = "") {
  dftrace_options_t o{};
  o.struct_size = sizeof o;
  o.enable = o.compression = o.level = o.metadata = o.install_signal_handlers = o.bind_atexit = -1;
  if (env_value)
    setenv("DFTRACE_TELEMETRY_INTERVAL", env_value, 1);
  else
    unsetenv("DFTRACE_TELEMETRY_INTERVAL");
  if (!yaml_file.empty()) setenv("DFTRACE_CONFIG", yaml_file.c_str(), 1);
  testing::internal::CaptureStderr();
  config c = load_config(&o);
  testing::internal::GetCapturedStderr();
  unsetenv("DFTRACE_CONFIG");
  unsetenv("DFTRACE_TELEMETRY_INTERVAL");
  return c;
}

}  // namespace

TEST(TelemetryConfig, OffUnlessGivenATime) {
  EXPECT_EQ(load_with(nullptr).telemetry_interval, 0);
  EXPECT_EQ(load_with("off").telemetry_interval, 0);
  EXPECT_EQ(load_with("OFF").telemetry_interval, 0);
  EXPECT_EQ(load_with("0").telemetry_interval, 0);
  EXPECT_DOUBLE_EQ(load_with("100ms").telemetry_interval, 0.1);
  EXPECT_DOUBLE_EQ(load_with("2").telemetry_interval, 2.0);
  EXPECT_EQ(load_with("5ms").telemetry_interval, 0);  // below 10ms: refused, stays off
}

TEST(TelemetryConfig, FromTheYamlFile) {
  const std::string file = testing::TempDir() + "telemetry-" + std::to_string(getpid()) + ".yaml";
  std::ofstream(file) << "telemetry:\n  interval: 250ms\n";
  EXPECT_DOUBLE_EQ(load_with(nullptr, file).telemetry_interval, 0.25);
  EXPECT_EQ(load_with("off", file).telemetry_interval, 0);  // the environment wins
  std::remove(file.c_str());
}

TEST(TelemetryConfig, LockFileBesideTheTrace) {
  config c;
  c.output_prefix = "/runs/job7/trace";
  EXPECT_EQ(telemetry_lock_path(c, "node12"), "/runs/job7/trace-node12.telemetry.lock");
  c.output_file = "/runs/job7/rank0.pfw.gz";
  EXPECT_EQ(telemetry_lock_path(c, "node12"), "/runs/job7/dftrace-node12.telemetry.lock");
  c.output_file = "alone.pfw.gz";
  EXPECT_EQ(telemetry_lock_path(c, "n"), "./dftrace-n.telemetry.lock");
}
