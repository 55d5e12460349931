// consumer.cpp: uses the installed headers and library.
#include <dftrace/dftrace.hpp>

int main() {
  { auto s = dftrace::ai.compute.forward.scope(); }
  return dftrace::finalize();
}
