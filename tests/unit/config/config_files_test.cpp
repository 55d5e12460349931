// config_files_test.cpp: every file the configuration reads is a regular file of bounded size;
// a FIFO, a directory, a device or /proc/self/mem is one message, never a hang.
#include "config/config_files.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "config/config.hpp"
#include "config_fixture.hpp"

using namespace dftrace::detail;

namespace {

class ConfigFiles : public ConfigFixture {
 protected:
  ConfigFiles() : ConfigFixture("cfgfiles") {}

  // Runs load_config() in a child with `name`=`value` in its environment, so that a load that
  // blocks (a FIFO nobody writes) is seen as a timeout instead of a test that never ends.
  // Returns what the child printed on stderr, and whether it finished within 30 s.
  struct outcome {
    bool finished = false;
    std::string err;
    bool unusable = false, enable = false;
    size_t rules = 0;
  };
  static outcome load_in_child(const char *name, const std::string &value,
                               const char *more_name = nullptr, const char *more_value = nullptr) {
    int err_pipe[2], result_pipe[2];
    EXPECT_EQ(pipe(err_pipe), 0);
    EXPECT_EQ(pipe(result_pipe), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(err_pipe[1], 2);
      setenv(name, value.c_str(), 1);
      if (more_name) setenv(more_name, more_value, 1);
      const config c = load_config(nullptr);
      const char r[3] = {
          static_cast<char>(c.config_unusable), static_cast<char>(c.enable),
          static_cast<char>(c.aggregation_include.size() + c.aggregation_exclude.size())};
      (void)!write(result_pipe[1], r, sizeof r);
      _exit(0);
    }
    close(err_pipe[1]);
    close(result_pipe[1]);
    outcome o;
    int status = 0;
    for (int i = 0; i < 300; ++i) {  // 30 s: a blocked load never finishes
      if (waitpid(pid, &status, WNOHANG) == pid) {
        o.finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        break;
      }
      usleep(100000);
    }
    if (!o.finished) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    char buf[4096];
    for (ssize_t n; (n = read(err_pipe[0], buf, sizeof buf)) > 0;) o.err.append(buf, n);
    char r[3] = {};
    if (read(result_pipe[0], r, sizeof r) == 3) {
      o.unusable = r[0];
      o.enable = r[1];
      o.rules = static_cast<unsigned char>(r[2]);
    }
    close(err_pipe[0]);
    close(result_pipe[0]);
    return o;
  }
  static int lines(const std::string &s) {
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
  }
  std::string fifo() {
    const std::string p = dir_ + "/fifo";
    EXPECT_EQ(mkfifo(p.c_str(), 0600), 0);
    return p;
  }
  std::string huge() {  // sparse: 1 GiB that takes no room
    const std::string p = dir_ + "/huge.yaml";
    const int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, off_t{1} << 30), 0);
    close(fd);
    return p;
  }
};

}  // namespace

TEST_F(ConfigFiles, ReadRegularFileSaysWhatEachKindIs) {
  std::string text, why;
  const std::string f = dir_ + "/ok.yaml";
  std::ofstream(f) << "enable: true\n";
  EXPECT_EQ(read_regular_file(f, 100, &text, &why), file_read::ok);
  EXPECT_EQ(text, "enable: true\n");
  EXPECT_EQ(read_regular_file(f, 5, &text, &why), file_read::too_large);
  EXPECT_EQ(text, "");
  EXPECT_EQ(read_regular_file(dir_ + "/none", 100, &text, &why), file_read::missing);
  EXPECT_EQ(read_regular_file(dir_, 100, &text, &why), file_read::directory);
  EXPECT_EQ(read_regular_file(fifo(), 100, &text, &why), file_read::not_regular);
  EXPECT_EQ(why, "a FIFO");
  EXPECT_EQ(read_regular_file("/dev/zero", 100, &text, &why), file_read::not_regular);
  EXPECT_EQ(why, "a character device");
  EXPECT_EQ(read_regular_file(huge(), 1 << 20, &text, &why), file_read::too_large);
  // Regular by its type, but a read at offset 0 fails (EIO): not a hang, not a crash.
  EXPECT_EQ(read_regular_file("/proc/self/mem", 100, &text, &why), file_read::unreadable);
  // /proc files say 0 bytes: read to the end all the same, and never past the limit.
  EXPECT_EQ(read_regular_file("/proc/self/status", 1 << 20, &text, &why), file_read::ok);
  EXPECT_NE(text.find("Pid:"), std::string::npos);
  EXPECT_EQ(read_regular_file("/proc/self/status", 10, &text, &why), file_read::too_large);
}

// aggregation.file naming a FIFO froze the program at its first region: yaml-cpp's LoadFile
// waited for a writer while the init mutex was held.
TEST_F(ConfigFiles, AggregationFileThatIsNotAFileIsOneMessageAndNoHang) {
  const std::string rules = dir_ + "/rules.yaml";
  std::ofstream(rules) << "inclusion: [\"cat == 'POSIX'\"]\n";
  const outcome good = load_in_child("DFTRACE_AGGREGATION_FILE", rules);
  ASSERT_TRUE(good.finished);
  EXPECT_EQ(good.err, "");
  EXPECT_EQ(good.rules, 1u);
  for (const std::string &path :
       {fifo(), dir_, std::string("/proc/self/mem"), std::string("/dev/zero"), huge()}) {
    for (const char *name : {"DFTRACE_AGGREGATION_FILE", "DFTRACER_AGGREGATION_FILE"}) {
      const outcome o = load_in_child(name, path, "DFTRACE_ENABLE", "1");
      EXPECT_TRUE(o.finished) << name << "=" << path << " did not finish in 30 s";
      EXPECT_EQ(lines(o.err), 1) << path << ": " << o.err;
      EXPECT_NE(o.err.find("aggregation.file: " + path), std::string::npos) << o.err;
      EXPECT_NE(o.err.find("no rules from it"), std::string::npos) << o.err;
      EXPECT_TRUE(o.enable);  // the rest of the configuration holds
      EXPECT_FALSE(o.unusable);
      EXPECT_EQ(o.rules, 0u);
    }
  }
  // Named in the YAML file rather than the environment: the same.
  const std::string cfg = dir_ + "/c.yaml";
  std::ofstream(cfg) << "aggregation:\n  file: " << dir_ << "/fifo\n";
  const outcome o = load_in_child("DFTRACE_CONFIG", cfg);
  EXPECT_TRUE(o.finished);
  EXPECT_EQ(lines(o.err), 1) << o.err;
  EXPECT_NE(o.err.find("a FIFO, not a file"), std::string::npos) << o.err;
}

TEST_F(ConfigFiles, ConfigurationFileThatIsNotAFileIsOneMessageAndNoHang) {
  // Not a file at all: tracing stays off. A file that can not be read: the other layers hold.
  struct expect_t {
    std::string path;
    const char *words;
    bool unusable;
  };
  for (const expect_t &x : {expect_t{fifo(), "a FIFO, not a file; tracing is off", true},
                            expect_t{dir_, "a directory, not a file; tracing is off", true},
                            expect_t{"/dev/zero", "a character device, not a file", true},
                            expect_t{"/proc/self/mem", "can not be read", false},
                            expect_t{huge(), "can not be read (1073741824 bytes", false}}) {
    for (const char *name : {"DFTRACE_CONFIG", "DFTRACER_CONFIGURATION"}) {
      const outcome o = load_in_child(name, x.path);
      EXPECT_TRUE(o.finished) << name << "=" << x.path << " did not finish in 30 s";
      EXPECT_EQ(lines(o.err), 1) << x.path << ": " << o.err;
      EXPECT_NE(o.err.find(x.words), std::string::npos) << o.err;
      EXPECT_EQ(o.unusable, x.unusable) << x.path;
    }
  }
}
