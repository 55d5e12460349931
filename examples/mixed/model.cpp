// model.cpp: the C++ layer of the mixed example, a tiny linear network whose layers call Fortran
// kernels.
//
// Loaded from Python with ctypes, so its entry points are extern "C". Each layer is a region
// of the C++ face (dftrace.hpp) that encloses the Fortran kernel's region: the three faces
// share libdftrace's tree and per-thread nesting, so the kernel's event nests in the layer's,
// which nests in the Python caller's.
#include <dftrace/dftrace.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

extern "C" {
// kernel.f90 (matrices column-major, rows x cols)
void mixed_kernel_matvec(int rows, int cols, const double *a, const double *x, double *y);
void mixed_kernel_matvec_t(int rows, int cols, const double *a, const double *g, double *y);
void mixed_kernel_axpy(int n, double alpha, const double *x, double *y);
}

namespace {

struct model {
  int layers = 0, width = 0;
  std::vector<std::vector<double>> w;     // w[l]: width x width, column-major
  std::vector<std::vector<double>> act;   // act[0] = input, act[l + 1] = w[l] act[l]
  std::vector<std::vector<double>> grad;  // grad[l] = d loss / d act[l]
  bool have_forward = false, have_backward = false;
};

model the_model;

// Nodes of this library: "forward.layer", "backward.layer", "step.update" (category compute).
const dftrace::node &forward_layer() {
  static const dftrace::node n = dftrace::ai.compute.forward.derive("layer");
  return n;
}
const dftrace::node &backward_layer() {
  static const dftrace::node n = dftrace::ai.compute.backward.derive("layer");
  return n;
}
const dftrace::node &step_update() {
  static const dftrace::node n = dftrace::ai.compute.step.derive("update");
  return n;
}

bool ready(const char *what) {
  if (the_model.layers > 0) return true;
  std::fprintf(stderr, "mixed_model: %s before mixed_model_init\n", what);
  return false;
}

}  // namespace

extern "C" {

// Creates a network of `layers` square layers of size `width`, weights drawn from `seed`.
// Returns 0, or -1 for sizes out of range.
int mixed_model_init(int layers, int width, unsigned seed) {
  auto s = dftrace::ai.compute.init_node().scope({{"layers", layers}, {"width", width}});
  if (layers < 1 || layers > 64 || width < 1 || width > 4096) {
    std::fprintf(stderr, "mixed_model: bad sizes layers=%d width=%d\n", layers, width);
    return -1;
  }
  model m;
  m.layers = layers;
  m.width = width;
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0.0, 1.0 / std::sqrt(static_cast<double>(width)));
  m.w.assign(layers, std::vector<double>(static_cast<size_t>(width) * width));
  for (auto &wl : m.w)
    for (auto &v : wl) v = dist(rng);
  m.act.assign(layers + 1, std::vector<double>(width));
  m.grad.assign(layers + 1, std::vector<double>(width));
  the_model = std::move(m);
  return 0;
}

// Forward pass of one input of `n` (= width) values; returns the loss 0.5 * |output|^2.
double mixed_model_forward(const double *x, int n) {
  if (!ready("mixed_model_forward")) return NAN;
  model &m = the_model;
  if (!x || n != m.width) {
    std::fprintf(stderr, "mixed_model: forward wants %d values, got %d\n", m.width, n);
    return NAN;
  }
  m.act[0].assign(x, x + n);
  for (int l = 0; l < m.layers; ++l) {
    auto s = forward_layer().scope({{"layer", l}});
    mixed_kernel_matvec(m.width, m.width, m.w[l].data(), m.act[l].data(), m.act[l + 1].data());
  }
  double loss = 0;
  for (double v : m.act[m.layers]) loss += 0.5 * v * v;
  m.have_forward = true;
  return loss;
}

// Backward pass of the last forward: grad[l] = w[l]^T grad[l + 1], from the output down.
void mixed_model_backward(void) {
  if (!ready("mixed_model_backward") || !the_model.have_forward) return;
  model &m = the_model;
  m.grad[m.layers] = m.act[m.layers];  // d(0.5 |y|^2)/dy = y
  for (int l = m.layers - 1; l >= 0; --l) {
    auto s = backward_layer().scope({{"layer", l}});
    mixed_kernel_matvec_t(m.width, m.width, m.w[l].data(), m.grad[l + 1].data(), m.grad[l].data());
  }
  m.have_backward = true;
}

// Gradient step: w[l] -= lr * grad[l + 1] act[l]^T.
void mixed_model_step(double lr) {
  if (!ready("mixed_model_step") || !the_model.have_backward) return;
  model &m = the_model;
  std::vector<double> outer(static_cast<size_t>(m.width) * m.width);
  for (int l = 0; l < m.layers; ++l) {
    auto s = step_update().scope({{"layer", l}});
    for (int c = 0; c < m.width; ++c)
      for (int r = 0; r < m.width; ++r)
        outer[static_cast<size_t>(c) * m.width + r] = m.grad[l + 1][r] * m.act[l][c];
    mixed_kernel_axpy(m.width * m.width, -lr, outer.data(), m.w[l].data());
  }
  m.have_forward = m.have_backward = false;
}

void mixed_model_free(void) { the_model = model(); }

}  // extern "C"
