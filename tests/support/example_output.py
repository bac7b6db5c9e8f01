"""Reading what the examples print."""

from __future__ import annotations

import re

__all__ = ["routed_first"]


def routed_first(out: str, corpus: str) -> bool:
    """Whether some question of an example's output was routed to ``corpus`` first (``routes: ['table', ...]``)
    and its first retrieved document came from that corpus (``- [table]`` or ``- TextNode [table]``). The router may
    search a second or third corpus whose evidence is strong too; what is asserted is the corpus it ranks first and
    what comes back first."""
    name = re.escape(corpus)
    return re.search(rf"routes: \['{name}'[^\n]*\n\s+- (?:\w+ )?\[{name}\]", out) is not None
