"""Torch devices for the local encoders: which device to use, how many texts a bulk call gives it at once, whether
it runs in half precision, and moving a model onto it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError

__all__ = [
    "CPU_TORCH_BATCH",
    "CUDA_BULK_BATCH",
    "NVIDIA_DRIVER",
    "bulk_batch_size",
    "cuda_wanted",
    "half_precision",
    "resolve_device",
    "to_device",
]

#: Present when an NVIDIA driver is loaded: only then can ``device=None`` mean CUDA (checked before torch is imported).
NVIDIA_DRIVER = Path("/proc/driver/nvidia/version")

#: Texts per forward pass of torch on the CPU: 64 took half the CPU of 8 on the passages of
#: ``benchmarks/encoder_backends.py --bulk`` (15.8 against 31.0 CPU seconds).
CPU_TORCH_BATCH = 64

#: Texts per forward pass on a CUDA device. A GPU runs a batch's texts in parallel, so a pass of 8 or 64 texts leaves
#: most of it idle; 256 texts of up to 256 tokens in half precision need ~0.2 GB of activations per layer for a
#: MiniLM-sized encoder (hidden 384, intermediate 1536), well inside any CUDA card's memory. Not yet measured on a GPU.
CUDA_BULK_BATCH = 256


def resolve_device(device: str | None) -> Any:
    """``device`` as a ``torch.device``; ``None`` means CUDA when present, else the CPU."""
    import torch

    if device:
        try:
            return torch.device(device)
        except RuntimeError as e:
            raise ConfigError(f"Invalid torch device {device!r}: use 'cpu', 'cuda' or 'cuda:N'.") from e
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def cuda_wanted(device: str | None) -> bool:
    """Whether the local encoders run on a CUDA device: ``device`` names one (``cuda``, ``cuda:1``), or it is unset
    (``None`` or empty) and torch sees a CUDA device. Without an NVIDIA driver torch is not even imported."""
    named = (device or "").strip().lower()
    if named:
        return named.startswith("cuda")
    if not NVIDIA_DRIVER.exists():
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _on_cuda(device: Any) -> bool:
    """Whether a torch ``device`` (or its name, ``cuda:1``) is a CUDA device."""
    kind = getattr(device, "type", None) or str(device).split(":", 1)[0].strip().lower()
    return kind == "cuda"


def bulk_batch_size(device: Any) -> int:
    """Texts per forward pass of a bulk call on a torch ``device`` (or its name): :data:`CUDA_BULK_BATCH` on CUDA,
    :data:`CPU_TORCH_BATCH` elsewhere."""
    return CUDA_BULK_BATCH if _on_cuda(device) else CPU_TORCH_BATCH


def half_precision(device: Any) -> bool:
    """Whether a model on ``device`` runs in float16: on CUDA (tensor cores, half the memory traffic), not on the CPU,
    where float16 matrix products are slower than float32 ones."""
    return _on_cuda(device)


def to_device(model: Any, device: Any, *, what: str, half: bool = False) -> Any:
    """``model`` moved to ``device`` in evaluation mode (in float16 with ``half``); ``what`` names it in the error
    ("embedding model")."""
    try:
        model = model.to(device)
        if half:
            model = model.half()
    except (RuntimeError, AssertionError) as e:
        raise ConfigError(f"Cannot move the {what} to device {str(device)!r}: {e}.") from e
    model.eval()
    return model
