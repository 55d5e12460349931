"""dftrace.torch.model_graph: the model's module graph by torch.fx, robust to modules fx
cannot trace."""
from __future__ import annotations

from typing import Any, List

import torch

import dftrace


def _fx_target(node, prefix: str) -> str:
    t = node.target
    if node.op == "call_module":
        return ".".join(p for p in (prefix, str(t)) if p)
    if node.op == "call_function":
        mod = getattr(t, "__module__", None) or ""
        name = getattr(t, "__name__", None) or str(t)
        return name if mod in ("", "_operator", "builtins") else "%s.%s" % (
            mod.replace("torch._C._nn", "torch.nn.functional"), name)
    return str(t)


def _fx_nodes(graph, prefix: str) -> List[dict]:
    out = []
    for n in graph.nodes:
        entry = {"name": n.name, "op": n.op, "target": _fx_target(n, prefix),
                 "args": [a.name for a in n.all_input_nodes]}
        meta = n.meta.get("tensor_meta")
        if meta is not None and hasattr(meta, "shape"):
            entry["shape"] = [int(d) for d in meta.shape]
            entry["dtype"] = str(meta.dtype).replace("torch.", "")
        out.append(entry)
    return out


def _inputs_of_each_module(model: torch.nn.Module, example_inputs: Any) -> dict:
    """{id(module): its positional inputs} of one run of the model, without gradients."""
    inputs: dict = {}
    args = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    hooks = [m.register_forward_pre_hook(
        lambda m, a: inputs.setdefault(id(m), a)) for m in model.modules()]
    try:
        with torch.no_grad():
            model(*args)
    finally:
        for h in hooks:
            h.remove()
    return inputs


def _shapes(fx, module, graph, given, entry) -> None:
    """The nodes' shapes and dtypes from one run on `given` (a failure noted in the entry)."""
    from torch.fx.passes.shape_prop import ShapeProp
    try:
        ShapeProp(fx.GraphModule(module, graph)).propagate(*given)
    except Exception as e:  # noqa: BLE001
        entry["shape_error"] = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:200]


def _tracer_class(fx):
    """fx's Tracer, extended (made on first use: importing torch.fx costs time)."""
    class Tracer(fx.Tracer):
        """fx's tracer that keeps the chain of modules it is inside, to name the one that
        failed, and treats the ones that failed before as leaves."""

        def __init__(self, leaves) -> None:
            super().__init__()
            self.leaves, self.inside = leaves, []

        def is_leaf_module(self, m, qualname) -> bool:
            return qualname in self.leaves or super().is_leaf_module(m, qualname)

        def call_module(self, m, forward, args, kwargs):
            self.inside.append(self.path_of_module(m))
            out = super().call_module(m, forward, args, kwargs)
            self.inside.pop()
            return out
    return Tracer


def model_graph(model: torch.nn.Module, example_inputs: Any = None,
                record: bool = True) -> dict:
    """The model's module graph by torch.fx, robustly: a module fx cannot trace (data-dependent
    control flow, an untraceable call) becomes a leaf of its parent's graph and its own
    submodules are traced separately (recursively), so the result is a collection of graphs,
    with each failure's message. `example_inputs` (a tensor or a tuple of them): the model is
    run once on them (without gradients) and each graph gets its nodes' shapes and dtypes.
    With `record` (and tracing on), the collection is written into the trace as metadata
    (a `CM` line, key `model_graph`, value its JSON), which `dftrace cat --graph` prints.

    Args:
        model: the model.
        example_inputs: a tensor or a tuple of tensors to run the model on once, for shapes.
        record: write the result into the trace as metadata.

    Returns:
        {"model": class name, "graphs": [{"path": module path ("" is the model), "module":
        class name, "ok": bool, "error": message (failed ones), "leaves": paths that failed
        inside it, "nodes": [{"name", "op", "target", "args", "shape", "dtype"}]}],
        "failures": count}.

    Example:
        >>> doc = dftrace.torch.model_graph(model, torch.randn(2, 4))
        >>> [g["path"] for g in doc["graphs"]], doc["failures"]
        ([''], 0)
    """
    import json
    import torch.fx as fx

    inputs = _inputs_of_each_module(model, example_inputs) if example_inputs is not None else {}
    Tracer = _tracer_class(fx)
    graphs: List[dict] = []
    join = lambda *parts: ".".join(p for p in parts if p)  # noqa: E731

    def failed(module, path, message) -> None:
        graphs.append({"path": path, "module": type(module).__name__, "ok": False,
                       "error": message, "leaves": [], "nodes": []})
        for name, child in module.named_children():
            trace(child, join(path, name))

    def trace(module, path) -> None:
        leaves: dict = {}
        for _ in range(sum(1 for _ in module.modules()) + 1):
            tracer = Tracer(set(leaves))
            try:
                graph = tracer.trace(module)
                break
            except Exception as e:  # noqa: BLE001  (fx's failures are of many kinds)
                message = ("%s: %s" % (type(e).__name__, e)).strip().splitlines()[0][:400]
                culprit = tracer.inside[-1] if tracer.inside else ""
                if not culprit or culprit in leaves:
                    failed(module, path, message)
                    return
                leaves[culprit] = message
        else:
            failed(module, path, "gave up after one failure per submodule")
            return
        entry = {"path": path, "module": type(module).__name__, "ok": True, "error": None,
                 "leaves": [join(path, p) for p in leaves], "nodes": []}
        given = inputs.get(id(module))
        if given is not None:
            _shapes(fx, module, graph, given, entry)
        entry["nodes"] = _fx_nodes(graph, path)
        graphs.append(entry)
        for p, message in leaves.items():
            failed(module.get_submodule(p), join(path, p), message)

    trace(model, "")
    doc = {"model": type(model).__name__, "graphs": graphs,
           "failures": sum(1 for g in graphs if not g["ok"])}
    if record:
        dftrace.metadata("model_graph", json.dumps(doc, separators=(",", ":")))
    return doc
