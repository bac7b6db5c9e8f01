"""Image inputs (JPEG, PNG, WebP, GIF, BMP, TIFF) → validated :class:`ImageInfo` with a text description.

``load_rgb`` (pixels for encoders and models) lives in :mod:`universalrag.media` and is re-exported here.
"""

from __future__ import annotations

from ...media import load_rgb
from ..detect import IMAGE_EXTENSIONS
from .descriptions import DESCRIPTION_SOURCES, filename_words, sidecar_paths
from .read import ImageInfo, read_image

__all__ = [
    "DESCRIPTION_SOURCES",
    "IMAGE_EXTENSIONS",
    "ImageInfo",
    "filename_words",
    "load_rgb",
    "read_image",
    "sidecar_paths",
]
