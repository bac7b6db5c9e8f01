"""The demo: a small multimodal knowledge base built offline, and one question for each route.

:func:`build_demo_files` writes Markdown documents, CSV tables, captioned photographs and a subtitled
video into a folder (byte-identical on every run); ingest it with :data:`DEMO_VIDEO_OPTIONS` and each
of :func:`demo_questions` is answered by the top hit of the corpus its route names.
"""

from __future__ import annotations

from .build import DEMO_VIDEO_OPTIONS, DemoQuestion, build_demo_files, demo_file_names, demo_questions
from .open import DEMO_SCHEMA, demo_arguments, open_demo

__all__ = [
    "DEMO_SCHEMA",
    "DEMO_VIDEO_OPTIONS",
    "DemoQuestion",
    "build_demo_files",
    "demo_arguments",
    "demo_file_names",
    "demo_questions",
    "open_demo",
]
