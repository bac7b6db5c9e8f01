"""Markdown written for Sphinx's MyST parser (pip's docs) is read as Sphinx shows it: roles keep their text, targets
and comments vanish, directives read as their kind says. Plain Markdown reads as before. Real files, the real
bundled MiniLM, a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from universalrag.ingest.pipeline import ingest_paths
from universalrag.ingest.text.document import parse_text, read_text_file
from universalrag.retrieve import search_corpus
from universalrag.store import Store

#: A page laid out as pip's topics/caching.md is: version notes, a caution, tabs of code blocks, a target, roles.
CACHING = """\
# Caching

```{versionadded} 6.0

```

The harbour cache keeps every chart downloaded. See {ref}`Installing from local charts <local-charts>` and
{doc}`the keeper's guide <../keeper>`, or {ref}`charts-cli`.

(chart-cache)=

## Where is the cache stored

```{caution}
The layout of the cache may change between versions.
```

### Default paths

````{tab} Linux
```
~/.cache/harbour
```

The tool also respects `XDG_CACHE_HOME`.
````

````{tab} Windows
```
%LocalAppData%\\harbour\\Cache
```
````

% a comment the reader never sees

```{versionchanged} 20.0
The cache keeps charts built from a Git reference.
```
"""


def _text(source: str, name: str = "page.md") -> str:
    return parse_text(source.encode(), format="md", name=name).text


def _paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in text.split("\n\n")]


def test_roles_targets_and_comments_read_as_sphinx_shows_them() -> None:
    """47 of 487 passages of pip's docs held a raw ``{ref}`` role, 19 a ``(label)=`` target."""
    paragraphs = _paragraphs(_text(CACHING))
    assert (
        "The harbour cache keeps every chart downloaded. See Installing from local charts and the keeper's "
        "guide, or charts-cli."
    ) in paragraphs
    text = "\n".join(paragraphs)
    for markup in ("{ref}", "{doc}", "<local-charts>", "(chart-cache)=", "chart-cache", "a comment", "{"):
        assert markup not in text, markup


def test_directives_read_as_sphinx_shows_them() -> None:
    """Admonitions and version notes lead their text as Sphinx writes them; a tab keeps its label as a line before
    its body, so that the Windows path is found with the word Windows; code is kept as written."""
    paragraphs = _paragraphs(_text(CACHING))
    assert paragraphs[:2] == ["Caching", "New in version 6.0."]
    assert "Caution: The layout of the cache may change between versions." in paragraphs
    assert "Changed in version 20.0: The cache keeps charts built from a Git reference." in paragraphs
    windows = paragraphs.index("Windows")
    assert paragraphs[windows + 1] == "%LocalAppData%\\harbour\\Cache"
    linux = paragraphs.index("Linux")
    assert paragraphs[linux + 1 : linux + 3] == ["~/.cache/harbour", "The tool also respects XDG_CACHE_HOME."]
    assert "```" not in "".join(paragraphs) and "{tab}" not in "".join(paragraphs)


def test_code_hidden_directives_options_and_eval_rst() -> None:
    """A code block keeps its lines without its options; a table of contents and an include show nothing; another
    extension's directive (``pip-cli``) keeps its body as written, without its options; ``eval-rst`` is read as
    reStructuredText; a colon fence is a directive too; a generic admonition is led by its title."""
    text = _text("""\
# Commands

```{code-block} bash
:caption: Install it
:emphasize-lines: 2

python -m pip install harbour
python -m pip check
```

```{toctree}
:maxdepth: 2
:hidden:

secret_page
```

```{include} ../../SECRET.md
```

```{pip-cli}
---
prompt: true
---
$ pip download harbour==1.0
$ pip install harbour-1.0.tar.gz
```

```{rubric} Tide tables
```

````{dropdown} An empty dropdown
````

```{eval-rst}
.. note::

   Tides are given for :ref:`the main lock<main-lock>`.
```

:::{admonition} Before you sail
:class: tip
Check the tide tables.
:::

:Keeper: Morag Flett
:Radio channel: VHF 14
""")
    assert "python -m pip install harbour\npython -m pip check" in text
    assert "$ pip download harbour==1.0\n$ pip install harbour-1.0.tar.gz" in text
    paragraphs = _paragraphs(text)
    assert "Note: Tides are given for the main lock." in paragraphs
    assert "Before you sail: Check the tide tables." in paragraphs and "Tide tables" in paragraphs
    assert ["Keeper: Morag Flett", "Radio channel: VHF 14"] == paragraphs[-2:]
    for hidden in (
        ":caption:",
        "Install it",
        "emphasize",
        "maxdepth",
        ":hidden:",
        "secret_page",
        "SECRET",
        "prompt",
        "---",
        ":class:",
        "eval-rst",
        "admonition",
        ".. note",
        "empty dropdown",
    ):
        assert hidden not in text, hidden


def test_plain_markdown_is_not_read_as_myst() -> None:
    """Only a directive fence or a role makes a page MyST: a plain page's ``(label)=`` line, ``%`` line, field-like
    line and shell ``${name}`` stay as written."""
    source = "# Notes\n\n(draft)=\n\n% of readers\n\n:Name: value\n\nRun `echo ${HOME}` here.\n"
    assert _paragraphs(_text(source)) == ["Notes", "(draft)=", "% of readers", ":Name: value", "Run echo ${HOME} here."]


def test_deeply_nested_directives_are_kept_as_written(tmp_path: Path) -> None:
    """Each directive's body is read by a call of its own: nesting beyond a bound is kept as written, not a
    RecursionError."""
    depth = 300
    source = (
        "".join(":" * (depth + 3 - i) + "{note}\n" for i in range(depth))
        + "Innermost words.\n"
        + "".join(":" * (4 + i) + "\n" for i in range(depth))
    )
    page = tmp_path / "deep.md"
    page.write_text(source, encoding="utf-8")
    assert "Innermost words." in read_text_file(page).text


def test_a_tab_label_finds_its_passage(store: Store, minilm, tmp_path: Path) -> None:
    """ "where is the cache stored on Windows" found the passage of the Windows path sixth: the tab's label, the only
    place the word is written, was lost with the fence."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "caching.md").write_text(CACHING, encoding="utf-8")
    assert ingest_paths(store, minilm, [tmp_path / "docs"]).ok
    hit = search_corpus(store, minilm, "paragraph", "where is the harbour cache stored on Windows", k=1)[0]
    assert "Windows" in hit.content and "%LocalAppData%\\harbour\\Cache" in hit.content
