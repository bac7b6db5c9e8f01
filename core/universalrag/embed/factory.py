"""Build an embedder from a spec string such as ``minilm``, ``openai:MODEL`` or ``hf:PATH``.

Specs are resolved through a registry of prefix → factory; :func:`register_embedder` adds a prefix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config import Settings
from ..errors import ConfigError
from .base import Embedder
from .openai_encoder import OpenAIEmbedder
from .transformers_encoder import MINILM_NAME, TransformersEmbedder, check_model_dir

__all__ = ["make_embedder", "embedder_from_settings", "register_embedder", "embedder_specs"]

#: A factory gets the part of the spec after ``prefix:`` ("" when there is none) and the settings.
EmbedderFactory = Callable[[str, Settings], Embedder]


@dataclass(frozen=True, slots=True)
class _Entry:
    factory: EmbedderFactory
    usage: str
    takes_argument: bool


_REGISTRY: dict[str, _Entry] = {}


def register_embedder(prefix: str, factory: EmbedderFactory, *, usage: str, takes_argument: bool) -> None:
    """Make ``prefix`` (or ``prefix:ARG`` when ``takes_argument``) a valid spec handled by ``factory``.

    ``usage`` is shown in the error listing valid specs, for example ``"hf:PATH (a local model directory)"``.
    """
    if not prefix or ":" in prefix:
        raise ConfigError(f"An embedder prefix must be non-empty and contain no ':', got {prefix!r}.")
    _REGISTRY[prefix.lower()] = _Entry(factory, usage, takes_argument)


def embedder_specs() -> list[str]:
    """The valid spec forms, with a few words each."""
    return [entry.usage for entry in _REGISTRY.values()]


def _invalid(spec: str, why: str) -> ConfigError:
    forms = "; ".join(embedder_specs())
    return ConfigError(f"Invalid embedder spec {spec!r}: {why}. Valid forms: {forms}.")


def make_embedder(spec: str, *, settings: Settings | None = None) -> Embedder:
    """The embedder described by ``spec``, as documented for ``UNIVERSALRAG_EMBEDDER`` in
    :data:`universalrag.config.ENV_VARS`.

    ``settings`` supplies the device, endpoint URL, API key and dimensions; defaults when omitted.
    An unknown or malformed spec raises :class:`~universalrag.errors.ConfigError` listing the valid forms.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise _invalid(str(spec), "it is empty")
    text = spec.strip()
    prefix, sep, argument = text.partition(":")
    entry = _REGISTRY.get(prefix.lower())
    if entry is None:
        raise _invalid(text, f"unknown embedder {prefix!r}")
    argument = argument.strip()
    if entry.takes_argument and not argument:
        raise _invalid(text, f"{prefix!r} needs a value after the colon")
    if not entry.takes_argument and sep:
        raise _invalid(text, f"{prefix!r} takes no value after a colon")
    return entry.factory(argument, settings if settings is not None else Settings())


def embedder_from_settings(settings: Settings) -> Embedder:
    """The embedder named by ``settings.embedder``, configured from the other settings."""
    return make_embedder(settings.embedder, settings=settings)


def _minilm(_: str, settings: Settings) -> Embedder:
    return TransformersEmbedder.bundled_minilm(device=settings.device)


def _hf(path: str, settings: Settings) -> Embedder:
    directory = check_model_dir(Path(path).expanduser())  # fail fast on a wrong path
    return TransformersEmbedder(directory, device=settings.device)


def _openai(model: str, settings: Settings) -> Embedder:
    """An OpenAI-compatible embedder; for a model of unknown width, the endpoint is asked once, here."""
    dimensions = settings.embed_dimensions
    name, at, size = model.rpartition("@")
    if at and size.isdigit():  # "MODEL@N", as in the embedder's own name
        model, dimensions = name, int(size)
    embedder = OpenAIEmbedder(
        model, base_url=settings.embed_base_url, api_key=settings.embed_api_key, dimensions=dimensions
    )
    embedder.resolve_dimension()
    return embedder


register_embedder("minilm", _minilm, usage="'minilm' (bundled all-MiniLM-L6-v2, 384-d, offline)", takes_argument=False)
register_embedder(MINILM_NAME, _minilm, usage=f"{MINILM_NAME!r} (same as 'minilm')", takes_argument=False)
register_embedder(
    "openai",
    _openai,
    takes_argument=True,
    usage="'openai:MODEL' or 'openai:MODEL@DIMENSIONS' (an OpenAI-compatible embeddings endpoint)",
)
register_embedder("hf", _hf, usage="'hf:PATH' (a local transformers model directory)", takes_argument=True)
