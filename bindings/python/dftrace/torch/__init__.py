"""dftrace.torch: a PyTorch training step and model broken down without annotating them.

    import dftrace.torch as dt

    handle = dt.trace_model(model)          # compute.forward.<module path> per leaf module
    for x, y in loader:
        with dt.step(model, optimizer):     # compute.step, with forward, backward and the
            loss = loss_fn(model(x), y)     # optimizer's step inside it, and the step's memory
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
    handle.remove()

Events go on the `ai` tree (docs/ai-tree.md), into the same trace as every other event:
`step` (category `compute`), `forward` (the model's forward), `backward` (every tensor
`backward()`), `step.optimizer` (the optimizer's `step()`, derived from `compute.step`), and,
per module, `forward.<module path>` (derived from `compute.forward`, with the module's own
parameter count `params`). Memory: a `memory` counter on `compute.step` at each step's end
(bytes: the peak CUDA allocation of the step when CUDA is in use, the resident set otherwise).

Hooks are PyTorch's own (`register_forward_pre_hook`, `register_forward_hook`); backward and the
optimizer's step are wrapped for the duration of the `with` block only, and restored after it.

The parts, one feature a file: steps.py (step), model.py (trace_model), data.py
(instrument_dataloader), transfers.py, checkpoints.py, bridge.py (bridge_record_function),
automatic.py (auto), tables.py (summary), graph.py (model_graph), frameworks.py (the Hugging Face
and Lightning callbacks), distributed.py (torch.distributed); _undo.py: the one undo type.
"""
from __future__ import annotations

from .automatic import auto, instrument_distributed
from .bridge import bridge_record_function
from .checkpoints import instrument_checkpoints
from .data import instrument_dataloader
from .frameworks import huggingface_callback, lightning_callback
from .graph import model_graph
from .model import ModelHandle, trace_model
from .steps import step
from .tables import summary
from .transfers import instrument_transfers

__all__ = ["step", "trace_model", "ModelHandle", "instrument_dataloader", "bridge_record_function",
           "summary", "instrument_checkpoints", "instrument_transfers", "auto",
           "huggingface_callback", "lightning_callback", "model_graph", "instrument_distributed"]
