"""``python -m universalrag.cli``."""

from __future__ import annotations

from .entry import main

main()
