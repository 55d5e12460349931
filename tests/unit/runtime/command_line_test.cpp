// command_line_test.cpp: output.cmdline's three forms and output.redact's hidden values.
#include "runtime/command_line.hpp"

#include <gtest/gtest.h>

#include "config/config.hpp"

using namespace dftrace::detail;

namespace {
const std::string k_default_redact = [] {
  for (const auto &k : config_keys())
    if (std::string(k.key) == "output.redact") return std::string(k.default_text);
  return std::string("(no output.redact key)");
}();

std::string full(const std::vector<std::string> &argv,
                 const std::string &redact = k_default_redact) {
  return recorded_command_line(argv, "full", redact);
}
}  // namespace

TEST(CommandLine, FullExecAndNone) {
  const std::vector<std::string> argv = {"/usr/bin/prog", "-n", "3", "in.txt"};
  EXPECT_EQ(recorded_command_line(argv, "full", k_default_redact), "/usr/bin/prog;-n;3;in.txt");
  EXPECT_EQ(recorded_command_line(argv, "exec", k_default_redact), "/usr/bin/prog");
  EXPECT_EQ(recorded_command_line(argv, "none", k_default_redact), "");
  EXPECT_EQ(recorded_command_line({}, "full", k_default_redact), "");
}

TEST(CommandLine, DefaultRedactionHidesTheDocumentedSecrets) {
  EXPECT_EQ(full({"p", "--password=hunter2", "--token=abc", "--secret=s", "--api-key=k"}),
            "p;--password=***;--token=***;--secret=***;--api-key=***");
  EXPECT_EQ(full({"p", "--password", "hunter2", "out"}), "p;--password;***;out");
  EXPECT_EQ(full({"p", "-token", "abc"}), "p;-token;***");
  EXPECT_EQ(full({"p", "PASSWORD=hunter2", "api_key=k", "GITHUB_TOKEN=t", "--DB_Password=x"}),
            "p;PASSWORD=***;api_key=***;GITHUB_TOKEN=***;--DB_Password=***");
  EXPECT_EQ(full({"git", "clone", "https://me:tok3n@example.org/r.git"}),
            "git;clone;https://me:***@example.org/r.git");
  // Names that only contain a secret's name, and values that merely look alike, stay.
  EXPECT_EQ(full({"p", "--token-file=/run/t", "--passwords-seen=3", "x=password", "--user", "u",
                  "https://host:8080/a@b", "https://me@host/"}),
            "p;--token-file=/run/t;--passwords-seen=3;x=password;--user;u;https://host:8080/a@b;"
            "https://me@host/");
  // The program itself is never taken for a value.
  EXPECT_EQ(full({"/opt/token=1/prog", "a"}), "/opt/token=1/prog;a");
  // A trailing two-argument name has nothing to hide.
  EXPECT_EQ(full({"p", "--password"}), "p;--password");
}

TEST(CommandLine, RedactListIsTheUsersToChoose) {
  EXPECT_EQ(full({"p", "--password=x", "--pin=1234"}, "pin"), "p;--password=x;--pin=***");
  EXPECT_EQ(full({"p", "--password=x", "https://u:p@h/"}, "none"), "p;--password=x;https://u:p@h/");
  EXPECT_EQ(full({"p", "--password=x"}, ""), "p;--password=x");
  EXPECT_EQ(full({"p", "--Pin", "1", "--code=2"}, " pin , code "), "p;--Pin;***;--code=***");
  EXPECT_TRUE(is_secret_key("--aws-secret", "secret"));
  EXPECT_FALSE(is_secret_key("--secretary", "secret"));
  EXPECT_FALSE(is_secret_key("--", "secret"));
}
