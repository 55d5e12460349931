// fuzz_event_rules.cpp: DFTracer 2.x's aggregation rule expressions (writer/event_rules.hpp),
// as a rules file hands them over: each input line is one rule, compiled as an inclusion and
// then as an exclusion, and the rules are evaluated on a few events. Compiling must accept or
// refuse with a reason, never crash, and evaluation must terminate on any pattern.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "writer/event_rules.hpp"

using namespace dftrace::detail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view in(reinterpret_cast<const char *>(data), size);
  event_rules rules;
  rules.set_app("train");
  rules.set_rank(1);
  std::string why;
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    const std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    for (bool inclusion : {true, false}) {
      const bool ok = rules.add(inclusion, line, &why);
      if (!ok && why.empty()) abort();  // a refusal always says why
    }
  }
  static const rule_event events[] = {
      {"read", "POSIX", 1.7e15, 12}, {"", "", 0, 0}, {"forward%_", "compute", -1, 1e300}};
  for (const auto &e : events) {
    (void)rules.fold(false, e);
    (void)rules.fold(true, e);
  }
  return 0;
}
