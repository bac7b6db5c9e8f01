"""Torch devices for the local encoders: which device to use, and moving a model onto it."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError

__all__ = ["resolve_device", "to_device"]


def resolve_device(device: str | None) -> Any:
    """``device`` as a ``torch.device``; ``None`` means CUDA when present, else the CPU."""
    import torch

    if device:
        try:
            return torch.device(device)
        except RuntimeError as e:
            raise ConfigError(f"Invalid torch device {device!r}: use 'cpu', 'cuda' or 'cuda:N'.") from e
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def to_device(model: Any, device: Any, *, what: str) -> Any:
    """``model`` moved to ``device`` in evaluation mode; ``what`` names it in the error ("embedding model")."""
    try:
        model = model.to(device)
    except (RuntimeError, AssertionError) as e:
        raise ConfigError(f"Cannot move the {what} to device {str(device)!r}: {e}.") from e
    model.eval()
    return model
