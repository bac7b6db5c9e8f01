"""A long Texinfo manual's main menu is navigation (Nettle's manual, /usr/share/doc/nettle-dev/nettle.html): makeinfo
writes it as ``<table class="menu">``, a row per chapter ("• Introduction", "What is Nettle?") and then the detailed
node listing. A short one was already dropped, but past 200 words an element named like chrome was kept as a
possible page wrapper, so Nettle's menu became four passages of bullets and blurbs that outranked the chapters they
name ("• Installation How to install Nettle."). The page here is written in the test in makeinfo's shape."""

from __future__ import annotations

from universalrag.ingest.text import parse_text

CHAPTERS = [
    ("Introduction", "What is Nettle?"),
    ("Copyright", "Your rights."),
    ("Conventions", "General interface conventions."),
    ("Example", "An example program."),
    ("Linking", "Linking with libnettle and libhogweed."),
    ("Reference", "All Nettle functions and features."),
    ("Installation", "How to install Nettle."),
    ("Index", "Function and concept index."),
]
NODES = [f"Node {i}" for i in range(60)]


def menu_row(name: str, blurb: str) -> str:
    anchor = name.replace(" ", "-")
    return (
        f'<tr><td align="left" valign="top">&bull; <a href="#{anchor}">{name}</a></td>'
        f'<td>&nbsp;&nbsp;</td><td align="left" valign="top">{blurb}\n</td></tr>\n'
    )


def manual(*, wrapper_words: int = 0) -> bytes:
    rows = "".join(menu_row(n, b) for n, b in CHAPTERS)
    rows += (
        '<tr><th colspan="3" align="left" valign="top"><pre class="menu-comment"> &mdash; The Detailed Node '
        "Listing &mdash;\n\nReference\n\n</pre></th></tr>"
    )
    for i, node in enumerate(NODES):  # the detailed node listing: bare links under each chapter's name
        if i % 10 == 0:
            rows += (
                f'<tr><th colspan="3" align="left" valign="top"><pre class="menu-comment">\n'
                f"Group {i // 10} of the reference\n\n</pre></th></tr>"
            )
        rows += menu_row(node, "")
    wrapper = ""
    if wrapper_words:  # a page wrapper named like chrome, holding prose and a link or two: content
        words = " ".join(f"word{i}" for i in range(wrapper_words))
        wrapper = f'<div class="header-wrapper"><p>{words}. See <a href="#Index">the index</a>.</p></div>'
    return (
        f'<html><head><meta name="Generator" content="makeinfo"><title>Nettle manual</title></head><body>'
        f'<h1 class="top">Nettle</h1><p>This document describes the Nettle low-level cryptographic library.</p>'
        f'<table class="menu" border="0" cellspacing="0">{rows}</table>{wrapper}'
        f'<h2 class="chapter">9 Installation</h2><p>Nettle uses autoconf. To build it, unpack the source and run '
        f"configure.</p></body></html>"
    ).encode()


def test_a_long_texinfo_menu_is_navigation() -> None:
    doc = parse_text(manual(), format="html", name="nettle.html")
    assert "How to install Nettle." not in doc.text and "Node 7" not in doc.text and "Group 3" not in doc.text
    assert "Detailed Node Listing" not in doc.text
    assert doc.text.split("\n\n") == [
        "Nettle",
        "This document describes the Nettle low-level cryptographic library.",
        "9 Installation",
        "Nettle uses autoconf. To build it, unpack the source and run configure.",
    ]


def test_a_long_wrapper_named_like_chrome_is_still_content() -> None:
    doc = parse_text(manual(wrapper_words=300), format="html", name="nettle.html")
    assert "word299. See the index." in doc.text
