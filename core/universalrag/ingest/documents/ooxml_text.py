"""Text of Office Open XML paragraphs, formulas included: Word's and PowerPoint's math (OMML) as LaTeX.

python-docx and python-pptx skip equations when they give a paragraph's text; these functions walk the XML
instead, so "the energy $E=mc^{2}$ of …" stays in the paragraph. Fractions, super- and subscripts, radicals,
n-ary operators (sums, integrals), delimiters and accents are written as LaTeX; anything else keeps its text.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MATH_NS", "omml_to_latex", "paragraph_text"]

MATH_NS = "http://schemas.openxmlformats.org/officeDocument/2006/math"
_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"


def _m(tag: str) -> str:
    return f"{{{MATH_NS}}}{tag}"


_NARY = {"∑": r"\sum", "∏": r"\prod", "∫": r"\int", "∬": r"\iint", "∮": r"\oint", "⋃": r"\bigcup", "⋂": r"\bigcap"}


def _child(el: Any, tag: str) -> Any:
    return el.find(_m(tag))


def _arg(el: Any, tag: str) -> str:
    found = _child(el, tag)
    return omml_to_latex(found) if found is not None else ""


def _chr(el: Any, pr: str, default: str) -> str:
    props = _child(el, pr)
    node = props.find(_m("chr")) if props is not None else None
    return node.get(_m("val"), default) if node is not None else default


def omml_to_latex(el: Any) -> str:
    """LaTeX for an OMML element (``m:oMath`` or any part of one)."""
    tag = el.tag.rsplit("}", 1)[-1] if isinstance(el.tag, str) else ""
    if tag == "t":
        return el.text or ""
    if tag == "f":
        return rf"\frac{{{_arg(el, 'num')}}}{{{_arg(el, 'den')}}}"
    if tag == "sSup":
        return f"{_arg(el, 'e')}^{{{_arg(el, 'sup')}}}"
    if tag == "sSub":
        return f"{_arg(el, 'e')}_{{{_arg(el, 'sub')}}}"
    if tag == "sSubSup":
        return f"{_arg(el, 'e')}_{{{_arg(el, 'sub')}}}^{{{_arg(el, 'sup')}}}"
    if tag == "rad":
        degree = _arg(el, "deg")
        return rf"\sqrt[{degree}]{{{_arg(el, 'e')}}}" if degree else rf"\sqrt{{{_arg(el, 'e')}}}"
    if tag == "nary":
        op = _chr(el, "naryPr", "∫")
        return f"{_NARY.get(op, op)}_{{{_arg(el, 'sub')}}}^{{{_arg(el, 'sup')}}} {_arg(el, 'e')}"
    if tag == "d":
        props = _child(el, "dPr")
        beg = props.find(_m("begChr")) if props is not None else None
        end = props.find(_m("endChr")) if props is not None else None
        left = beg.get(_m("val"), "(") if beg is not None else "("
        right = end.get(_m("val"), ")") if end is not None else ")"
        inner = ", ".join(omml_to_latex(e) for e in el.findall(_m("e")))
        return f"{left}{inner}{right}"
    if tag == "acc":
        return rf"\hat{{{_arg(el, 'e')}}}" if _chr(el, "accPr", "̂") == "̂" else _arg(el, "e")
    if tag.endswith("Pr"):
        return ""  # properties: no text
    return "".join(omml_to_latex(child) for child in el)


def paragraph_text(p: Any) -> str:
    """The visible text of a ``w:p`` or ``a:p`` element, with tabs and line breaks as spaces and each formula
    as ``$LaTeX$``."""
    parts: list[str] = []
    stack = [p]
    while stack:
        el = stack.pop()
        tag = el.tag if isinstance(el.tag, str) else ""
        if tag in (_m("oMath"),):
            parts.append(f"${omml_to_latex(el).strip()}$")
            continue
        if tag in (f"{{{_W_NS}}}t", f"{{{_A_NS}}}t"):
            # all of the run's text: an entity reference the part declares is a child node (written as
            # "&name;", never expanded), and the text after it is that node's tail
            parts.append("".join(el.itertext()))
        elif tag in (f"{{{_W_NS}}}tab", f"{{{_W_NS}}}br", f"{{{_W_NS}}}cr", f"{{{_A_NS}}}br"):
            parts.append(" ")
        elif tag in (f"{{{_W_NS}}}delText", f"{{{_W_NS}}}instrText"):
            continue  # deleted text (tracked changes) and field codes are not visible
        stack.extend(reversed(list(el)))
    return " ".join("".join(parts).split())
