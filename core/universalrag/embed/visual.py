"""Visual encoders: the :class:`VisualEncoder` protocol and a CLIP-style implementation through transformers.

(How the visual and text similarities are fused lives in :mod:`universalrag.fusion`, the weights in
:class:`~universalrag.config.Settings`; frames are pooled with :func:`universalrag.embed.vectors.normalised_mean`.)

A visual encoder maps images *and* query texts into one space (the text tower of the same model), so an
image corpus can be searched with a text query in its visual column. torch, transformers and Pillow are
imported inside methods; the model is loaded on first use, under a lock, and never downloaded
(``local_files_only=True``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError, EmbeddingError, MissingDependencyError
from .base import clip_to_tokens
from .devices import resolve_device, to_device

if TYPE_CHECKING:  # pragma: no cover - typing only
    from PIL import Image as PILImage

    from ..config import Settings

__all__ = [
    "CLIPVisualEncoder",
    "VisualEncoder",
    "visual_encoder_from_settings",
]


#: A Hugging Face model id ("name" or "owner/name"), looked up in the local cache only.
_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
#: Tokenizer outputs a text tower may take, if its get_text_features names them.
_TEXT_INPUTS = ("input_ids", "attention_mask", "token_type_ids", "position_ids")


@runtime_checkable
class VisualEncoder(Protocol):
    """Maps images and texts into one space of L2-normalised float32 vectors of a fixed dimension.

    ``embed_texts`` uses the same model's text tower: it turns queries into vectors comparable with
    the image vectors. ``name`` is stored with the corpus so that vectors of two models never mix.
    """

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_images(self, images: Sequence[PILImage.Image]) -> np.ndarray:
        """Embed Pillow images; returns shape ``(len(images), dimension)``, rows of norm 1."""
        ...

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts (queries) into the image space; returns shape ``(len(texts), dimension)``."""
        ...


class CLIPVisualEncoder:
    """A CLIP-style model through transformers: any model with ``get_image_features`` and
    ``get_text_features`` (CLIP and its fine-tunes), with its tokenizer and image processor.

    ``model`` is a local directory written by ``save_pretrained`` or a model id already in the local
    Hugging Face cache (``cache_dir`` overrides the cache location); nothing is ever downloaded. The
    constructor does no I/O; a missing directory or an id absent from the cache raises
    :class:`ConfigError` on first use. Images are preprocessed with the Pillow backend of the image
    processor (torchvision is not needed). Instances are thread-safe.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        name: str | None = None,
        device: str | None = None,
        batch_size: int = 16,
        cache_dir: str | Path | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size}.")
        ref = str(model)
        looks_like_id = not isinstance(model, Path) and bool(_MODEL_ID.fullmatch(ref))
        self._name = name or (ref if looks_like_id else Path(ref).expanduser().name or ref)
        self._device_arg = device
        self.batch_size = batch_size
        self._model_ref = ref
        self._cache_dir = cache_dir
        self._path: Path | None = None
        self._dimension: int | None = None
        self._load_lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()  # fast tokenizers are not safe to call concurrently
        self._model: Any = None
        self._tokenizer: Any = None
        self._processor: Any = None
        self._device: Any = None
        self._text_inputs: tuple[str, ...] = ("input_ids",)
        self._max_length = 77

    def __repr__(self) -> str:
        return (
            f"CLIPVisualEncoder(name={self._name!r}, model={self._model_ref!r}, "
            f"device={self._device_arg!r}, loaded={self._model is not None})"
        )

    @property
    def name(self) -> str:
        """The model's name as stored with the corpus."""
        return self._name

    @property
    def path(self) -> Path:
        """The local model directory (resolves a model id in the cache)."""
        if self._path is None:
            self._path = self._resolve()
        return self._path

    @property
    def dimension(self) -> int:
        """Width of the vectors: ``projection_dim`` from config.json, else asked of the loaded model."""
        if self._dimension is None:
            try:
                config = json.loads((self.path / "config.json").read_text(encoding="utf-8"))
            except (OSError, ValueError) as e:
                raise ConfigError(f"Cannot read {str(self.path / 'config.json')!r}: {e}.") from e
            width = config.get("projection_dim")
            if isinstance(width, int) and width > 0:
                self._dimension = width
            else:  # another family: embed one word and measure
                self._ensure_loaded()
                self._dimension = int(self._embed_text_batch(["a"]).shape[1])
        return self._dimension

    @property
    def device(self) -> str:
        """The torch device the model runs on (loads the model)."""
        self._ensure_loaded()
        return str(self._device)

    # ------------------------------------------------------------------ loading

    def _resolve(self) -> Path:
        """The model directory: the path itself, or the snapshot of a cached model id."""
        ref = self._model_ref
        expected = (
            "a local directory with config.json, weights, tokenizer files and "
            "preprocessor_config.json (as written by save_pretrained), or the id of a model already "
            "in the local Hugging Face cache"
        )
        path = Path(ref).expanduser()
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise ConfigError(f"Visual model path {ref!r} has no config.json; expected {expected}.")
            return path.resolve()
        if path.exists():
            raise ConfigError(f"Visual model path {ref!r} is not a directory; expected {expected}.")
        if not _MODEL_ID.fullmatch(ref) or ref.startswith((".", "~")):
            raise ConfigError(f"Visual model path {ref!r} does not exist; expected {expected}.")
        try:
            from huggingface_hub import snapshot_download

            snapshot = snapshot_download(ref, local_files_only=True, cache_dir=self._cache_dir)
        except Exception as e:
            raise ConfigError(
                f"Visual model {ref!r} is neither a local directory nor in the local Hugging Face cache, and "
                f"models are never downloaded; expected {expected}. Copy the model's files to a directory "
                "and pass its path."
            ) from e
        return Path(str(snapshot))

    def _ensure_loaded(self) -> None:
        if self._model is not None:
            return
        with self._load_lock:
            if self._model is not None:
                return
            path = self.path
            import transformers
            from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

            device = resolve_device(self._device_arg)
            # transformers 5 picks a backend; "pil" avoids torchvision. In 4.x the slow processor is PIL.
            major = int(transformers.__version__.split(".", 1)[0])
            backend: dict[str, Any] = {"backend": "pil"} if major >= 5 else {"use_fast": False}
            try:
                tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
                processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True, **backend)
                model = AutoModel.from_pretrained(str(path), local_files_only=True)
            except (OSError, ValueError, KeyError, TypeError) as e:
                raise ConfigError(
                    f"Cannot load a CLIP-style model from {str(path)!r}: {e}. Expected a directory with "
                    "config.json, weights, tokenizer files and preprocessor_config.json."
                ) from e
            if not (
                callable(getattr(model, "get_image_features", None))
                and callable(getattr(model, "get_text_features", None))
            ):
                raise ConfigError(
                    f"The model in {str(path)!r} ({type(model).__name__}) has no image and text towers "
                    "(get_image_features/get_text_features); use a CLIP-style model."
                )
            model = to_device(model, device, what="visual model")
            params = inspect.signature(model.get_text_features).parameters
            self._text_inputs = tuple(k for k in _TEXT_INPUTS if k in params) or ("input_ids",)
            limit = 77
            text_config = getattr(model.config, "text_config", None)
            positions = getattr(text_config, "max_position_embeddings", None)
            if isinstance(positions, int) and positions > 0:
                limit = positions
            tok_max = getattr(tokenizer, "model_max_length", None)
            if isinstance(tok_max, int) and 0 < tok_max < limit:
                limit = tok_max
            self._max_length = limit
            self._tokenizer, self._processor, self._device = tokenizer, processor, device
            self._model = model  # last: other threads test this without the lock

    # ------------------------------------------------------------------ embedding

    @staticmethod
    def _features(output: Any) -> Any:
        """Projected features: a tensor (transformers 4) or the output's pooler_output (transformers 5)."""
        import torch

        if isinstance(output, torch.Tensor):
            return output
        pooled = getattr(output, "pooler_output", None)
        if pooled is None:
            raise EmbeddingError(f"The visual model returned {type(output).__name__} without features.")
        return pooled

    def _normalise(self, features: Any) -> np.ndarray:
        import torch

        vectors = torch.nn.functional.normalize(features.float(), p=2, dim=1)
        return vectors.cpu().numpy().astype(np.float32, copy=False)

    def _embed_image_batch(self, images: list[Any]) -> np.ndarray:
        import torch

        pixels = self._processor(images=images, return_tensors="pt")["pixel_values"]
        pixels = pixels.to(self._device, dtype=self._model.dtype)  # a half-precision checkpoint takes halves
        with torch.inference_mode():
            return self._normalise(self._features(self._model.get_image_features(pixel_values=pixels)))

    def _embed_text_batch(self, texts: list[str]) -> np.ndarray:
        import torch

        with self._tokenizer_lock:
            encoded = self._tokenizer(
                clip_to_tokens(texts, self._max_length),
                padding=True,
                truncation=True,
                max_length=self._max_length,
                return_tensors="pt",
            )
        inputs = {k: v.to(self._device) for k, v in encoded.items() if k in self._text_inputs}
        with torch.inference_mode():
            return self._normalise(self._features(self._model.get_text_features(**inputs)))

    def _run(self, items: list[Any], step: Any, what: str) -> np.ndarray:
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        for start in range(0, len(items), self.batch_size):
            try:
                out[start : start + self.batch_size] = step(items[start : start + self.batch_size])
            except RuntimeError as e:  # out of memory, device errors
                raise EmbeddingError(
                    f"Embedding {what} with {self._name!r} on {self._device} failed: {e}. Try a smaller "
                    "batch_size or another device."
                ) from e
        return out

    def embed_images(self, images: Sequence[PILImage.Image]) -> np.ndarray:
        """Embed Pillow images (any mode; converted to RGB); returns float32 ``(len(images), dimension)``."""
        try:
            from PIL import Image
        except ImportError as e:
            raise MissingDependencyError("pillow", "images", feature="image embeddings") from e
        items = list(images)
        for i, img in enumerate(items):
            if not isinstance(img, Image.Image):
                raise EmbeddingError(
                    f"embed_images() takes Pillow images; item {i} is a {type(img).__name__} "
                    "(load files with universalrag.ingest.images.load_rgb)."
                )
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self._ensure_loaded()
        rgb = [img if img.mode == "RGB" else img.convert("RGB") for img in items]
        return self._run(rgb, self._embed_image_batch, "images")

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts with the text tower into the image space; returns float32 ``(len(texts), dimension)``.

        Texts longer than the model's context (77 tokens for CLIP) are truncated.
        """
        if isinstance(texts, str):
            raise EmbeddingError("embed_texts() takes a sequence of strings, not one string; wrap it in a list.")
        items = list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise EmbeddingError(f"embed_texts() takes strings only; item {i} is a {type(text).__name__}.")
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self._ensure_loaded()
        return self._run(items, self._embed_text_batch, "texts")

    async def aembed_images(self, images: Sequence[PILImage.Image]) -> np.ndarray:
        """Async twin of :meth:`embed_images` (runs in a worker thread)."""
        return await asyncio.to_thread(self.embed_images, images)

    async def aembed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Async twin of :meth:`embed_texts` (runs in a worker thread)."""
        return await asyncio.to_thread(self.embed_texts, texts)


def visual_encoder_from_settings(settings: Settings) -> CLIPVisualEncoder | None:
    """The encoder named by ``settings.visual_encoder`` (on ``settings.device``), or None when unset."""
    model = getattr(settings, "visual_encoder", None)
    return CLIPVisualEncoder(model, device=settings.device) if model else None
