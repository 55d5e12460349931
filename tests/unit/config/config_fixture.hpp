// config_fixture.hpp: the fixture of the configuration's tests: no configuration variable set
// (every key's DFTRACE_* and DFTracer name, and the file's), and a private folder for files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "config/config.hpp"

class ConfigFixture : public ::testing::Test {
 protected:
  // `folder`: the name of this suite's folder under the test's temporary directory.
  explicit ConfigFixture(const char *folder) : folder_(folder) {}
  void SetUp() override {
    for (const auto &k : dftrace::detail::config_keys()) {
      unsetenv(k.env);
      if (k.dftracer_env) unsetenv(k.dftracer_env);
    }
    unsetenv("DFTRACE_CONFIG");
    unsetenv("DFTRACER_CONFIGURATION");
    dir_ = testing::TempDir() + folder_ + "-" + std::to_string(getpid());
    (void)system(("rm -rf " + dir_ + " && mkdir -p " + dir_).c_str());
  }
  void TearDown() override { (void)system(("rm -rf " + dir_).c_str()); }

  std::string dir_;

 private:
  const char *folder_;
};
