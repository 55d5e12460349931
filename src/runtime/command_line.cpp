// command_line.cpp: which arguments go into the trace's command line, and which values are
// replaced by "***".
#include "runtime/command_line.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>

namespace dftrace::detail {

namespace {

constexpr const char *k_hidden = "***";

// Lower case, '_' as '-', leading dashes gone: "--DB_Password" -> "db-password".
std::string normal_key(const std::string &key) {
  std::string k;
  size_t i = 0;
  while (i < key.size() && key[i] == '-') ++i;
  for (; i < key.size(); ++i) {
    const char ch = key[i] == '_' ? '-' : key[i];
    k += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return k;
}

// "KEY=" of a variable-style argument: letters, digits, '_', '-', '.' before the '='.
bool looks_like_assignment(const std::string &arg, size_t eq) {
  if (eq == 0 || eq == std::string::npos) return false;
  for (size_t i = 0; i < eq; ++i) {
    const unsigned char ch = static_cast<unsigned char>(arg[i]);
    if (!std::isalnum(ch) && ch != '_' && ch != '-' && ch != '.') return false;
  }
  return true;
}

// "scheme://user:secret@host/..." -> "scheme://user:***@host/...".
std::string hide_url_password(std::string arg) {
  for (size_t from = 0;;) {
    const size_t scheme = arg.find("://", from);
    if (scheme == std::string::npos) return arg;
    const size_t auth = scheme + 3;
    const size_t end = arg.find_first_of("/?#", auth);
    const size_t at = arg.rfind('@', end == std::string::npos ? std::string::npos : end);
    from = auth;
    if (at == std::string::npos || at < auth) continue;
    const size_t colon = arg.find(':', auth);
    if (colon == std::string::npos || colon > at || colon + 1 == at) continue;
    arg.replace(colon + 1, at - colon - 1, k_hidden);
    from = colon + 1 + std::char_traits<char>::length(k_hidden);
  }
}

}  // namespace

std::vector<std::string> process_arguments() {
  std::vector<std::string> argv;
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return argv;
  std::string raw;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  for (size_t s = 0; s < raw.size();) {
    size_t e = raw.find('\0', s);
    if (e == std::string::npos) e = raw.size();
    argv.push_back(raw.substr(s, e - s));
    s = e + 1;
  }
  return argv;
}

bool is_secret_key(const std::string &key, const std::string &redact) {
  const std::string k = normal_key(key);
  if (k.empty()) return false;
  for (size_t s = 0; s <= redact.size();) {
    size_t e = redact.find(',', s);
    if (e == std::string::npos) e = redact.size();
    std::string name = redact.substr(s, e - s);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    size_t b = 0;
    while (b < name.size() && std::isspace(static_cast<unsigned char>(name[b]))) ++b;
    name = normal_key(name.substr(b));
    s = e + 1;
    if (name.empty() || name == "none") continue;
    if (k == name) return true;
    if (k.size() > name.size() && k.compare(k.size() - name.size(), name.size(), name) == 0 &&
        k[k.size() - name.size() - 1] == '-')
      return true;
  }
  return false;
}

std::string recorded_command_line(const std::vector<std::string> &argv, const std::string &mode,
                                  const std::string &redact) {
  if (mode == "none" || argv.empty()) return std::string();
  const bool hiding =
      normal_key(redact) != "none" && redact.find_first_not_of(" ,") != std::string::npos;
  std::string out;
  const size_t n = mode == "exec" ? 1 : argv.size();
  bool next_is_secret = false;
  for (size_t i = 0; i < n; ++i) {
    std::string arg = argv[i];
    if (hiding && i > 0) {
      const size_t eq = arg.find('=');
      if (next_is_secret) {
        arg = k_hidden;
        next_is_secret = false;
      } else if (arg[0] == '-' && eq != std::string::npos) {
        if (is_secret_key(arg.substr(0, eq), redact))
          arg.replace(eq + 1, std::string::npos, k_hidden);
      } else if (arg[0] == '-') {
        next_is_secret = is_secret_key(arg, redact);
      } else if (looks_like_assignment(arg, eq) && is_secret_key(arg.substr(0, eq), redact)) {
        arg.replace(eq + 1, std::string::npos, k_hidden);
      }
      arg = hide_url_password(std::move(arg));
    }
    out += (i ? ";" : "") + arg;
  }
  return out;
}

}  // namespace dftrace::detail
