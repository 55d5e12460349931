// nvtx_forward.hpp: dftrace regions as NVTX ranges and instants as NVTX marks (nvtx.forward),
// so that Nsight Systems, or any NVTX tool, shows the annotations the application already has.
// The runtime calls these on the event path only while forwarding is on (runtime/README.md,
// "NVTX forwarding").
#pragma once

namespace dftrace::detail {

struct node;

namespace nvtx_forward {

// Whether regions are forwarded: `wanted` (nvtx.forward), the NVTX headers were there at build
// time, and a tool is attached (NVTX loaded one: NVTX_INJECTION64_PATH or a pre-injected one).
// Says once why not when wanted. Called at initialisation.
bool start(bool wanted);
// The region on n begins on this thread (an NVTX range pushed on the thread's NVTX stack).
void push(node *n);
// The innermost forwarded range of this thread ends.
void pop();
// An instant on n.
void mark(node *n);

}  // namespace nvtx_forward
}  // namespace dftrace::detail
