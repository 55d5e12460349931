#!/usr/bin/env python3
"""train.py: the Python layer of the mixed example, a training loop annotated with `from dftrace import ai`.

It drives a C++ model library (loaded with ctypes) whose layers run Fortran kernels; the C++
and Fortran code annotate with their own faces of dftrace, and everything lands in this
process's one trace, nested under the Python events.

    DFTRACE_ENABLE=1 DFTRACE_LOG_FILE=/tmp/mixed/trace PYTHONPATH=build/bindings/python \\
        python3 examples/mixed/train.py --lib build/examples/mixed/libmixed_model.so
"""
import argparse
import ctypes
import sys

from dftrace import ai


def load_library(path):
    """The C++ model's extern "C" entry points, typed for ctypes."""
    lib = ctypes.CDLL(path)
    lib.mixed_model_init.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_uint]
    lib.mixed_model_init.restype = ctypes.c_int
    lib.mixed_model_forward.argtypes = [ctypes.POINTER(ctypes.c_double), ctypes.c_int]
    lib.mixed_model_forward.restype = ctypes.c_double
    lib.mixed_model_backward.argtypes = []
    lib.mixed_model_backward.restype = None
    lib.mixed_model_step.argtypes = [ctypes.c_double]
    lib.mixed_model_step.restype = None
    lib.mixed_model_free.argtypes = []
    lib.mixed_model_free.restype = None
    return lib


class Model:
    """A linear network computed in C++ and Fortran; each pass is one Python event."""

    def __init__(self, lib, layers, width):
        self.lib, self.width = lib, width
        if lib.mixed_model_init(layers, width, 42) != 0:
            raise ValueError(f"mixed_model_init({layers}, {width}) failed")

    @ai.compute.forward
    def forward(self, batch):
        return self.lib.mixed_model_forward(batch, self.width)

    @ai.compute.backward
    def backward(self):
        self.lib.mixed_model_backward()

    @ai.compute.step
    def step(self, lr):
        self.lib.mixed_model_step(lr)

    def close(self):
        self.lib.mixed_model_free()


def batches(steps, width):
    """The data loader: one input vector per step (the same inputs as the C test driver)."""
    for s in range(steps):
        yield (ctypes.c_double * width)(*[1.0 + 0.1 * ((s * 7 + i) % 5) for i in range(width)])


@ai.pipeline.train
def train(model, epochs, steps, width, lr):
    global_step = 0
    for epoch in ai.pipeline.epoch.iter(range(epochs)):
        total = 0.0
        for batch in ai.dataloader.fetch.iter(batches(steps, width)):
            ai.update(step=global_step, epoch=epoch)  # reaches the C++ and Fortran events too
            total += model.forward(batch)
            model.backward()
            model.step(lr)
            global_step += 1
        print(f"epoch {epoch} loss {total / steps:.6f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="path of libmixed_model.so")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--width", type=int, default=8)
    ap.add_argument("--lr", type=float, default=0.01)
    opts = ap.parse_args()
    model = Model(load_library(opts.lib), opts.layers, opts.width)
    try:
        train(model, opts.epochs, opts.steps, opts.width, opts.lr)
    finally:
        model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
