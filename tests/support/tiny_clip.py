"""A tiny, randomly initialised CLIP model written to a directory, for testing the visual-encoder plumbing.

No CLIP weights can be downloaded on these machines, so tests build this instead. Its weights are
random: the vectors it makes have the right shapes, norms and determinism, but carry no meaning;
tests that use it check plumbing (loading, batching, storage, fusion), never retrieval quality.

What is written, all with the library's own ``save_pretrained`` so that loading takes the same path
as a real checkpoint:

- ``config.json`` + ``model.safetensors``: ``CLIPModel`` with 2-layer, 32-wide text and vision towers,
  32×32 images in 8×8 patches, and a 16-dimensional projection (:data:`TINY_CLIP_DIMENSION`);
- the tokenizer: a real CLIP byte-level BPE tokenizer built offline from a vocabulary written here —
  the 256 byte symbols, the same 256 with CLIP's end-of-word marker ``</w>``, ``<|startoftext|>`` and
  ``<|endoftext|>`` (514 tokens) — and no merges, so every word is spelled out symbol by symbol
  (``vocab.json``, ``merges.txt``, ``tokenizer.json``, ``tokenizer_config.json``);
- ``preprocessor_config.json``: a CLIP image processor (resize the short side to 32, centre-crop
  32×32, CLIP's mean and std), loaded by the encoder with the Pillow backend (no torchvision).
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["TINY_CLIP_DIMENSION", "TINY_CLIP_IMAGE_SIZE", "build_tiny_clip"]

#: Width of the tiny model's image and text embeddings (its projection_dim).
TINY_CLIP_DIMENSION = 16
#: Side of the square the image processor crops to.
TINY_CLIP_IMAGE_SIZE = 32
_CONTEXT = 77  # CLIP's text length
#: Scales the random initialisation: with CLIP's default (1.0) a tiny random tower maps every photo to
#: nearly the same direction (cosine > 0.93); at 5.0 different photos and texts get clearly different
#: vectors, which tests of search plumbing need.
_INIT_FACTOR = 5.0

_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


def _write_tokenizer(directory: Path) -> int:
    """Write a character-level CLIP BPE tokenizer; returns the vocabulary size."""
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import AutoTokenizer

    symbols = sorted(ByteLevel.alphabet())
    vocab = {s: i for i, s in enumerate(symbols)}
    vocab.update({s + "</w>": len(symbols) + i for i, s in enumerate(symbols)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (directory / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "CLIPTokenizer",
                "model_max_length": _CONTEXT,
                "bos_token": "<|startoftext|>",
                "eos_token": "<|endoftext|>",
                "unk_token": "<|endoftext|>",
                "pad_token": "<|endoftext|>",
            }
        ),
        encoding="utf-8",
    )
    # Round-trip through the library so tokenizer.json is written as a real checkpoint has it.
    AutoTokenizer.from_pretrained(str(directory), local_files_only=True).save_pretrained(str(directory))
    return len(vocab)


def _write_image_processor(directory: Path) -> None:
    try:  # transformers 5: the Pillow backend under its own name (no torchvision needed)
        from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil as Processor
    except ImportError:  # transformers 4: the "slow" processor is the Pillow/numpy one
        from transformers import CLIPImageProcessor as Processor  # type: ignore[assignment]

    side = TINY_CLIP_IMAGE_SIZE
    processor = Processor(
        size={"shortest_edge": side},
        crop_size={"height": side, "width": side},
        image_mean=_CLIP_MEAN,
        image_std=_CLIP_STD,
    )
    processor.save_pretrained(str(directory))


def build_tiny_clip(directory: Path, *, seed: int = 0) -> Path:
    """Write a tiny randomly initialised CLIP (model, tokenizer, image processor) into ``directory``.

    Returns ``directory``. The same ``seed`` gives the same weights; the global torch RNG is left as
    it was. Takes well under a second once torch and transformers are imported.
    """
    import torch
    from transformers import CLIPConfig, CLIPModel

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    vocab_size = _write_tokenizer(directory)
    eos = vocab_size - 1
    config = CLIPConfig(
        text_config={
            "vocab_size": vocab_size,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": _CONTEXT,
            "bos_token_id": vocab_size - 2,
            "eos_token_id": eos,
            "pad_token_id": eos,
            "initializer_factor": _INIT_FACTOR,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": TINY_CLIP_IMAGE_SIZE,
            "patch_size": 8,
            "initializer_factor": _INIT_FACTOR,
        },
        projection_dim=TINY_CLIP_DIMENSION,
        initializer_factor=_INIT_FACTOR,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CLIPModel(config).eval()
    model.save_pretrained(str(directory))
    _write_image_processor(directory)
    return directory
