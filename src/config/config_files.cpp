// config_files.cpp: the files the configuration reads, checked to be regular files and read
// from memory (yaml-cpp's LoadFile would block on a FIFO and read a device without end).
#include "config/config_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "config/config.hpp"
#include "config/messages.hpp"
#include "config/yaml_tree.hpp"

namespace dftrace::detail {

file_read read_regular_file(const std::string &path, size_t max_bytes, std::string *text,
                            std::string *why) {
  text->clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    *why = std::strerror(e);
    return e == ENOENT || e == ENOTDIR ? file_read::missing : file_read::unreadable;
  }
  struct stat st {};
  file_read result = file_read::ok;
  if (::fstat(fd, &st) != 0) {
    *why = std::strerror(errno);
    result = file_read::unreadable;
  } else if (S_ISDIR(st.st_mode)) {
    *why = "a directory";
    result = file_read::directory;
  } else if (!S_ISREG(st.st_mode)) {
    *why = S_ISFIFO(st.st_mode)   ? "a FIFO"
           : S_ISSOCK(st.st_mode) ? "a socket"
           : S_ISCHR(st.st_mode)  ? "a character device"
           : S_ISBLK(st.st_mode)  ? "a block device"
                                  : "not a regular file";
    result = file_read::not_regular;
  } else if (static_cast<unsigned long long>(st.st_size) > max_bytes) {
    *why = std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
           " a configuration file may have";
    result = file_read::too_large;
  } else {
    // A /proc file says 0 bytes and may hold more: read to the end, never past the limit.
    try {
      text->resize(max_bytes + 1 < size_t{65536} ? max_bytes + 1 : size_t{65536});
      size_t used = 0;
      for (;;) {
        if (used == text->size()) {
          if (used > max_bytes) break;
          text->resize(std::min(text->size() * 2, max_bytes + 1));
        }
        const ssize_t n = ::read(fd, &(*text)[used], text->size() - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          *why = std::strerror(errno);
          result = file_read::unreadable;
          break;
        }
        if (n == 0) break;
        used += static_cast<size_t>(n);
      }
      text->resize(used);
      if (result == file_read::ok && used > max_bytes) {
        *why =
            "more than the " + std::to_string(max_bytes) + " bytes a configuration file may have";
        result = file_read::too_large;
      }
    } catch (const std::exception &) {
      *why = "out of memory";
      result = file_read::unreadable;
    }
  }
  ::close(fd);
  if (result != file_read::ok) std::string().swap(*text);
  return result;
}

yaml_load load_yaml_file(const std::string &path, yaml_value *root, std::string *why) {
  std::string text;
  switch (read_regular_file(path, k_config_file_max_bytes, &text, why)) {
    case file_read::ok: break;
    case file_read::missing: return yaml_load::missing;
    case file_read::directory:
    case file_read::not_regular: return yaml_load::not_a_file;
    case file_read::too_large:
    case file_read::unreadable: return yaml_load::unreadable;
  }
  return parse_yaml(text, root, why) ? yaml_load::ok : yaml_load::not_yaml;
}

namespace {

void read_rules(config &c, const yaml_value &root, const std::string &file, config_messages &msgs) {
  for (size_t i = 0; i + 1 < root.items.size(); i += 2) {
    const yaml_value &value = root.items[i + 1];
    std::string key = root.items[i].text;
    for (char &ch : key) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::vector<std::string> *list = key == "inclusion"   ? &c.aggregation_include
                                     : key == "exclusion" ? &c.aggregation_exclude
                                                          : nullptr;
    if (!list) {
      msgs.warn("%s: key '%s' is not inclusion or exclusion; ignored", file.c_str(), key.c_str());
      continue;
    }
    if (value.is_scalar()) {
      list->push_back(value.text);
    } else if (value.is_sequence()) {
      for (const auto &r : value.items) {
        if (r.is_scalar())
          list->push_back(r.text);
        else
          msgs.warn("%s: an entry of '%s' is not a rule (%s); ignored", file.c_str(), key.c_str(),
                    r.text.c_str());
      }
    } else if (!value.is_null()) {
      msgs.warn("%s: '%s' is not a list of rules; ignored", file.c_str(), key.c_str());
    }
  }
}

}  // namespace

void read_rules_file(config &c, config_messages &msgs) {
  // The expressions are compiled later (writer/event_rules.hpp), which reports their mistakes.
  const std::string &file = c.aggregation_file;
  const std::string what = "aggregation.file: " + file;
  yaml_value root;
  std::string why;
  switch (load_yaml_file(file, &root, &why)) {
    case yaml_load::ok: break;
    case yaml_load::not_a_file:
      msgs.warn("%s is %s, not a file; no rules from it", what.c_str(), why.c_str());
      return;
    case yaml_load::not_yaml:
      msgs.warn("%s is not valid YAML (%s); no rules from it", what.c_str(), why.c_str());
      return;
    default:
      msgs.warn("%s can not be read (%s); no rules from it", what.c_str(), why.c_str());
      return;
  }
  if (!root.is_map()) {
    msgs.warn("%s is not a map of inclusion and exclusion lists; no rules from it", what.c_str());
    return;
  }
  try {
    read_rules(c, root, file, msgs);
  } catch (const std::exception &e) {
    msgs.warn("%s could not be applied (%s); the rest of it is ignored", what.c_str(), e.what());
  }
}

}  // namespace dftrace::detail
