"""The ``envtable`` directive: the table of environment variables, made from :data:`universalrag.config.ENV_VARS`
so that the documentation and the library cannot disagree about what the library reads."""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


class EnvTable(SphinxDirective):
    """Render every variable of ``ENV_VARS`` as a row: its name and what it does."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from universalrag.config import ENV_VARS

        lines = ["| variable | meaning |", "| --- | --- |"]
        for name, meaning in ENV_VARS.items():
            cell = meaning.replace("|", "\\|")
            lines.append(f"| `{name}` | {cell} |")
        container = nodes.container()
        self.state.nested_parse(
            StringList(lines, source="universalrag.config.ENV_VARS"), self.content_offset, container
        )
        return container.children


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("envtable", EnvTable)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
