/* mixed_driver.c: drives the mixed example's C++/Fortran library from C, the way
 * examples/mixed/train.py does from Python.
 *
 * Usage: mixed_driver [epochs steps layers width]. Same tree calls as the Python driver:
 * pipeline.train around everything, an iter loop on pipeline.epoch and one on
 * dataloader.fetch, ai.update(step=, epoch=) as dftrace_node_update_int on the root, and a
 * region on compute.forward / compute.backward / compute.step around each library call. */
#include <dftrace/dftrace.h>

#include <stdio.h>
#include <stdlib.h>

int mixed_model_init(int layers, int width, unsigned seed);
double mixed_model_forward(const double *x, int n);
void mixed_model_backward(void);
void mixed_model_step(double lr);
void mixed_model_free(void);

int main(int argc, char **argv) {
  int epochs = 2, steps = 3, layers = 3, width = 8;
  if (argc == 5) {
    epochs = atoi(argv[1]);
    steps = atoi(argv[2]);
    layers = atoi(argv[3]);
    width = atoi(argv[4]);
  }
  double *x = malloc(sizeof(double) * (size_t)(width > 0 ? width : 1));
  if (!x || mixed_model_init(layers, width, 42u) != 0) return 1;

  dftrace_node_t *root = dftrace_node_root();
  dftrace_node_t *forward = dftrace_node_find("compute.forward");
  dftrace_node_t *backward = dftrace_node_find("compute.backward");
  dftrace_node_t *step_node = dftrace_node_find("compute.step");

  dftrace_region_t train = dftrace_region_begin(dftrace_node_find("pipeline.train"));
  dftrace_iter_t epoch_loop;
  dftrace_iter_begin(&epoch_loop, dftrace_node_find("pipeline.epoch"), 0, NULL, NULL,
                     DFTRACE_USE_NODE_STATE);
  int global_step = 0;
  for (int e = 0; e < epochs; ++e) {
    dftrace_iter_fetch(&epoch_loop);
    dftrace_iter_body(&epoch_loop);
    dftrace_iter_t batches;
    dftrace_iter_begin(&batches, dftrace_node_find("dataloader.fetch"), 0, NULL, NULL,
                       DFTRACE_USE_NODE_STATE);
    double loss = 0;
    for (int s = 0; s < steps; ++s, ++global_step) {
      dftrace_iter_fetch(&batches);
      for (int i = 0; i < width; ++i) x[i] = 1.0 + 0.1 * ((s * 7 + i) % 5);
      dftrace_iter_body(&batches);
      dftrace_node_update_int(root, "step", global_step); /* ai.update(step=, epoch=) */
      dftrace_node_update_int(root, "epoch", e);

      dftrace_region_t r = dftrace_region_begin(forward);
      loss += mixed_model_forward(x, width);
      dftrace_region_end(r);
      r = dftrace_region_begin(backward);
      mixed_model_backward();
      dftrace_region_end(r);
      r = dftrace_region_begin(step_node);
      mixed_model_step(0.01);
      dftrace_region_end(r);
    }
    dftrace_iter_fetch(&batches); /* the fetch that finds no more items: dropped */
    dftrace_iter_end(&batches);
    printf("epoch %d loss %.6f\n", e, loss / steps);
  }
  dftrace_iter_fetch(&epoch_loop);
  dftrace_iter_end(&epoch_loop);
  dftrace_region_end(train);
  mixed_model_free();
  free(x);
  return 0;
}
