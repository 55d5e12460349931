"""The one undo type of dftrace.torch: what every instrument_*() call, auto() and trace_model
return. Each undo step is a function or an object with remove() (a torch hook handle, another
Undo); remove() runs them once, the last added first."""
from __future__ import annotations

from typing import Any, Callable, Iterable


class Undo:
    """A handle on what an instrumentation call changed; remove() puts it all back."""

    def __init__(self, steps: Iterable[Any] = ()) -> None:
        self._steps = list(steps)

    def add(self, step: Any) -> "Undo":
        """Adds one more thing to undo.

        Args:
            step: a function of no arguments, or an object with remove() (a torch hook
                handle, another Undo).

        Returns:
            This handle.

        Example:
            >>> u = Undo()
            >>> u.add(lambda: print("undone")).remove()
            undone
        """
        self._steps.append(step)
        return self

    def remove(self) -> None:
        """Undoes everything, the last change first; a second call does nothing.

        Args:
            None.

        Returns:
            None.

        Example:
            >>> handle = dftrace.torch.instrument_transfers()
            >>> handle.remove()  # Tensor.to, .cuda and .cpu are torch's own again
        """
        steps, self._steps = self._steps, []
        for step in reversed(steps):
            step.remove() if hasattr(step, "remove") else step()


def patch(owner: Any, name: str, make: Callable[[Any], Any]) -> Undo:
    """Replaces owner.name by make(original); the undo puts the original back, or, when it was
    inherited rather than the owner's own, deletes the replacement again."""
    own = name in owner.__dict__
    original = owner.__dict__[name] if own else getattr(owner, name)
    setattr(owner, name, make(original))

    def restore() -> None:
        if own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)
    return Undo([restore])
