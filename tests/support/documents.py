"""Real PDF, Word and PowerPoint files for tests and benchmarks, written with reportlab, python-docx, python-pptx.

Every writer returns the path it wrote. The report (:func:`write_report_pdf`, :func:`write_report_docx`)
is one small story about a lighthouse, with a table ("Table 1"), a photograph ("Figure 1", cited by a
sentence on another page), running headers and footers with page numbers, so that tests can check each
unit and its page. Pictures are scikit-image's bundled photographs (no download).
"""

from __future__ import annotations

import io
import random
from collections.abc import Sequence
from pathlib import Path

from support.media import photo

__all__ = [
    "KEEPERS_TABLE",
    "write_chart_pdf",
    "write_corrupt_pdf",
    "write_deck_pptx",
    "write_encrypted_pdf",
    "write_paper_pdf",
    "write_report_docx",
    "write_report_pdf",
    "write_scanned_pdf",
    "write_table_pdf",
    "write_text_pdf",
    "write_truncated_pdf",
    "write_two_column_pdf",
]

KEEPERS_TABLE: tuple[tuple[str, ...], ...] = (
    ("Decade", "Keepers", "Lamp fuel"),
    ("1890s", "3", "Whale oil"),
    ("1920s", "2", "Kerosene"),
    ("1950s", "2", "Acetylene gas"),
    ("1980s", "1", "Mains electricity"),
)

INTRO = (
    "Kestrel Point Lighthouse stands on a granite headland at the mouth of the northern harbour. "
    "It was first lit in 1891 and guided fishing boats through the narrow channel for over a century."
)
STAFFING = (
    "The number of keepers fell as the lamp was modernised. Table 1 lists the keepers and the fuel of "
    "the lamp in each decade."
)
LAMP = (
    "The lamp room sits at the top of one hundred and twelve spiral steps. A clockwork mechanism turned "
    "the lens every twenty seconds, and the keeper wound it by hand every four hours through the night."
)
KITCHEN = (
    "Life in the cottage was simple. Figure 1 shows the cup of coffee the keeper drank every morning "
    "at dawn before climbing the tower to extinguish the lamp."
)
STORMS = (
    "The great storm of 1953 tore the roof from the oil store and flooded the cottage kitchen. "
    "Repairs took the whole summer and the keepers slept in the tower."
)
AUTOMATION = (
    "The light was automated in 1987. Since then a solar panel charges the batteries that run the "
    "lantern, and an engineer visits twice a year."
)
FIGURE_CAPTION = "Figure 1: The keeper's morning cup of coffee on the cottage table."
TABLE_CAPTION = "Table 1: Keepers and lamp fuel by decade."


def _photo_png(name: str, size: tuple[int, int]) -> io.BytesIO:
    buf = io.BytesIO()
    photo(name, size=size).save(buf, format="PNG")
    buf.seek(0)
    return buf


def _running(canvas, doc) -> None:  # type: ignore[no-untyped-def]
    """Running header and footer on every page (what readers must drop)."""
    width, height = doc.pagesize
    canvas.saveState()
    canvas.setFont("Helvetica", 8)
    canvas.drawString(72, height - 40, "Kestrel Point Lighthouse Trust - Annual Report")
    canvas.drawCentredString(width / 2, 30, f"Page {doc.page}")
    canvas.restoreState()


def write_report_pdf(path: Path, *, extra_pages: int = 1) -> Path:
    """A three-page report: title, numbered sections, Table 1 with caption, Figure 1 (a photograph) with caption
    on page 2, cited on page 3; running header and "Page N" footer on every page."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Image, PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    ss = getSampleStyleSheet()
    story = [
        Paragraph("Kestrel Point Lighthouse", ss["Title"]),
        Paragraph("1 Introduction", ss["Heading1"]),
        Paragraph(INTRO, ss["BodyText"]),
        Paragraph("2 Keepers", ss["Heading1"]),
        Paragraph(STAFFING, ss["BodyText"]),
        Spacer(1, 8),
        Paragraph(TABLE_CAPTION, ss["BodyText"]),
    ]
    table = Table([list(r) for r in KEEPERS_TABLE])
    table.setStyle(
        TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black), ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold")])
    )
    story += [
        table,
        PageBreak(),
        Paragraph("3 The lamp room", ss["Heading1"]),
        Paragraph(LAMP, ss["BodyText"]),
        Spacer(1, 12),
        Image(_photo_png("coffee", (300, 200)), width=240, height=160),
        Paragraph(FIGURE_CAPTION, ss["BodyText"]),
        PageBreak(),
        Paragraph("4 Life at the light", ss["Heading1"]),
        Paragraph(KITCHEN, ss["BodyText"]),
        Paragraph(STORMS, ss["BodyText"]),
    ]
    for i in range(extra_pages):
        story += [PageBreak(), Paragraph(f"{5 + i} Automation", ss["Heading1"]), Paragraph(AUTOMATION, ss["BodyText"])]
    SimpleDocTemplate(str(path), pagesize=A4, title="Kestrel Point Lighthouse").build(
        story, onFirstPage=_running, onLaterPages=_running
    )
    return path


_WORDS = (
    "harbour keeper signal lantern granite channel beacon tide storm island fog bell tower coast ship "
    "light rock cliff gull pier"
).split()


def _sentence(rng: random.Random, words: int = 14) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def write_text_pdf(path: Path, *, pages: int, seed: int = 0) -> Path:
    """``pages`` pages of headings and dense body text (about 450 words a page), with a page-number footer."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    rng = random.Random(seed)
    ss = getSampleStyleSheet()
    story = []
    for p in range(pages):
        story.append(Paragraph(f"Section {p + 1}", ss["Heading2"]))
        story += [Paragraph(" ".join(_sentence(rng) for _ in range(8)), ss["BodyText"]) for _ in range(4)]
        story.append(PageBreak())
    SimpleDocTemplate(str(path), pagesize=A4).build(story, onFirstPage=_running, onLaterPages=_running)
    return path


def write_table_pdf(
    path: Path, tables: Sequence[Sequence[Sequence[str]]], *, images: bool = False, seed: int = 0, ruling: str = "grid"
) -> Path:
    """One page per table (bold header row; ``ruling`` "grid" draws every cell border, "booktabs" only rules
    above and below the header and below the last row, "none" no line at all) with a paragraph above it and,
    with ``images``, a photograph below it."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Image, PageBreak, Paragraph, SimpleDocTemplate, Table, TableStyle

    rng = random.Random(seed)
    ss = getSampleStyleSheet()
    story = []
    for i, rows in enumerate(tables):
        story.append(Paragraph(f"Part {i + 1}", ss["Heading2"]))
        story.append(Paragraph(" ".join(_sentence(rng) for _ in range(3)), ss["BodyText"]))
        story.append(Paragraph(f"Table {i + 1}: Measurements of part {i + 1}.", ss["BodyText"]))
        table = Table([list(r) for r in rows])
        rules = {
            "grid": [("GRID", (0, 0), (-1, -1), 0.5, colors.black)],
            "none": [],
            "booktabs": [
                ("LINEABOVE", (0, 0), (-1, 0), 1, colors.black),
                ("LINEBELOW", (0, 0), (-1, 0), 0.5, colors.black),
                ("LINEBELOW", (0, -1), (-1, -1), 1, colors.black),
            ],
        }[ruling]
        table.setStyle(TableStyle([*rules, ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold")]))
        story.append(table)
        if images:
            story.append(Image(_photo_png(("coffee", "rocket", "chelsea")[i % 3], (200, 140)), width=200, height=140))
            story.append(Paragraph(f"Figure {i + 1}: Photograph of part {i + 1}.", ss["BodyText"]))
        story.append(PageBreak())
    SimpleDocTemplate(str(path), pagesize=A4).build(story)
    return path


def write_chart_pdf(path: Path) -> Path:
    """A page with a paragraph, a bar chart drawn as vector graphics (no picture object) and its caption
    "Figure 2: …" below it."""
    from reportlab.graphics.shapes import Drawing, Line, Rect
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer

    ss = getSampleStyleSheet()
    chart = Drawing(300, 160)
    chart.add(Line(10, 10, 290, 10))
    chart.add(Line(10, 10, 10, 150))
    for i, height in enumerate((40, 75, 120, 95, 140)):
        chart.add(Rect(25 + i * 52, 10, 36, height, fillColor=colors.steelblue))
    story = [
        Paragraph("Visitors", ss["Heading1"]),
        Paragraph(
            "Visitor numbers grew every summer after the museum opened in the old oil store. "
            "Figure 2 shows the visitors per year.",
            ss["BodyText"],
        ),
        Spacer(1, 12),
        chart,
        Paragraph("Figure 2: Visitors per year at the lighthouse museum.", ss["BodyText"]),
    ]
    SimpleDocTemplate(str(path), pagesize=A4).build(story)
    return path


LEFT_COLUMN = [
    "The northern harbour was dredged in 1902",
    "so that the herring fleet could enter",
    "at low tide. Forty boats sailed from",
    "its quay each autumn and the smokehouses",
    "along the shore worked day and night.",
]
RIGHT_COLUMN = [
    "The southern quarry supplied the granite",
    "for the tower. Stone was cut into blocks",
    "of two tons, dragged to the cliff on",
    "wooden rollers and lowered to barges",
    "waiting below in the calm of the bay.",
]


def write_two_column_pdf(path: Path) -> Path:
    """One page: a full-width title, then two columns whose lines are drawn interleaved (left line 1, right
    line 1, left line 2, …), so that content-stream order is not reading order; plus a page number."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    width, height = A4
    c.setFont("Helvetica-Bold", 18)
    c.drawString(72, height - 90, "Harbour and Quarry")
    c.setFont("Helvetica", 10)
    y = height - 130
    for left, right in zip(LEFT_COLUMN, RIGHT_COLUMN, strict=True):
        c.drawString(72, y, left)
        c.drawString(width / 2 + 20, y, right)
        y -= 13
    c.drawCentredString(width / 2, 30, "7")
    c.save()
    return path


def write_paper_pdf(path: Path, *, paragraphs: int = 9) -> Path:
    """A two-column article (reportlab frames): a centred title across both columns, justified paragraphs
    "P0 …", "P1 …" flowing from the left column into the right one, a "2 Methods" heading and a photograph with
    its caption in the right column."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import BaseDocTemplate, Frame, FrameBreak, Image, PageTemplate, Paragraph

    ss = getSampleStyleSheet()
    body = ss["BodyText"].clone("justified", alignment=4)
    width, height = A4
    rng = random.Random(1)
    column = (width - 100) / 2 - 10
    frames = [
        Frame(50, height - 120, width - 100, 60, id="title"),
        Frame(50, 60, column, height - 190, id="left"),
        Frame(width / 2 + 10, 60, column, height - 190, id="right"),
    ]
    doc = BaseDocTemplate(str(path), pagesize=A4, pageTemplates=[PageTemplate(frames=frames)])
    story = [Paragraph("A Study of Harbour Lights", ss["Title"]), FrameBreak()]
    for i in range(paragraphs):
        if i == 3:
            story.append(Paragraph("2 Methods", ss["Heading2"]))
        if i == 5:
            story.append(Image(_photo_png("rocket", (200, 150)), width=200, height=150))
            story.append(Paragraph("Figure 1: A rocket on the pad.", body))
        story.append(Paragraph(f"P{i} " + " ".join(rng.choice(_WORDS) for _ in range(70)) + ".", body))
    doc.build(story)
    return path


SCANNED_LINES = ("HARBOUR MASTER LOG", "The ferry arrived at noon", "with twelve passengers aboard")


def write_scanned_pdf(path: Path) -> Path:
    """An image-only page: text drawn into a bitmap (no text layer), as a scanner would produce."""
    import reportlab
    from PIL import Image, ImageDraw, ImageFont
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    font = ImageFont.truetype(str(Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"), 56)
    image = Image.new("L", (1654, 2339), 255)  # A4 at 200 dpi
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(SCANNED_LINES):
        draw.text((160, 200 + i * 110), line, fill=0, font=font)
    c = canvas.Canvas(str(path), pagesize=A4)
    c.drawImage(ImageReader(image), 0, 0, width=A4[0], height=A4[1])
    c.save()
    return path


def write_encrypted_pdf(path: Path, *, password: str = "secret") -> Path:
    """A one-page PDF that needs a user password to open."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4, encrypt=password)
    c.drawString(72, 700, "Confidential lighthouse accounts.")
    c.save()
    return path


def write_truncated_pdf(path: Path, source: Path) -> Path:
    """The first half of ``source``'s bytes, as an interrupted download leaves it."""
    data = source.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def write_corrupt_pdf(path: Path) -> Path:
    """A PDF header and end marker around random bytes."""
    rng = random.Random(7)
    path.write_bytes(b"%PDF-1.7\n" + bytes(rng.randrange(256) for _ in range(4000)) + b"\n%%EOF\n")
    return path


_OMML = (
    '<m:oMath xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math">'
    "<m:r><m:t>E=m</m:t></m:r><m:sSup><m:e><m:r><m:t>c</m:t></m:r></m:e>"
    "<m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath>"
)


def write_report_docx(path: Path) -> Path:
    """The lighthouse report as a Word file: Title and Heading styles, Table 1 (first row marked as header),
    Figure 1 (a photograph with alt text) and its caption, a formula in a paragraph, a page break, a page
    header and footer (outside the body)."""
    import docx
    from docx.oxml import parse_xml
    from docx.shared import Inches

    d = docx.Document()
    d.core_properties.title = "Kestrel Point Lighthouse"
    d.sections[0].header.paragraphs[0].text = "Kestrel Point Lighthouse Trust - Annual Report"
    d.sections[0].footer.paragraphs[0].text = "Confidential footer"
    d.add_heading("Kestrel Point Lighthouse", 0)
    d.add_heading("Introduction", 1)
    d.add_paragraph(INTRO)
    d.add_heading("Keepers", 1)
    d.add_paragraph(STAFFING)
    d.add_paragraph(TABLE_CAPTION, style="Caption")
    table = d.add_table(rows=0, cols=3)
    for row in KEEPERS_TABLE:
        cells = table.add_row().cells
        for cell, value in zip(cells, row, strict=True):
            cell.text = value
    tr_pr = table.rows[0]._tr.get_or_add_trPr()
    tr_pr.append(parse_xml('<w:tblHeader xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>'))
    d.add_page_break()
    d.add_heading("The lamp room", 1)
    d.add_heading("Optics", 2)
    p = d.add_paragraph("The lens obeys the energy relation ")
    p._p.append(parse_xml(_OMML))
    p.add_run(" as every light does.")
    d.add_paragraph(LAMP)
    d.add_picture(_photo_png("coffee", (300, 200)), width=Inches(3))
    d.inline_shapes[0]._inline.docPr.set("descr", "A cup of coffee on a wooden table")
    d.add_paragraph(FIGURE_CAPTION, style="Caption")
    d.add_heading("Life at the light", 1)
    d.add_paragraph(KITCHEN)
    d.save(str(path))
    return path


def write_deck_pptx(path: Path) -> Path:
    """A four-slide deck: a title slide with bullets and speaker notes, a slide with a photograph, a slide
    with a table and a slide with a column chart."""
    from pptx import Presentation
    from pptx.chart.data import CategoryChartData
    from pptx.enum.chart import XL_CHART_TYPE
    from pptx.util import Inches

    prs = Presentation()
    prs.core_properties.title = "Lighthouse Budget 2026"
    s1 = prs.slides.add_slide(prs.slide_layouts[1])
    s1.shapes.title.text = "Budget overview"
    body = s1.placeholders[1].text_frame
    body.text = "Lantern repairs cost 4,200 pounds"
    body.add_paragraph().text = "Solar panels replaced in March"
    s1.notes_slide.notes_text_frame.text = "Remind the board that the fog bell needs a new clapper."
    s2 = prs.slides.add_slide(prs.slide_layouts[5])
    s2.shapes.title.text = "The keeper's kitchen"
    pic = s2.shapes.add_picture(_photo_png("coffee", (300, 200)), Inches(1), Inches(2), width=Inches(4))
    pic._element.nvPicPr.cNvPr.set("descr", "A cup of coffee")
    caption = s2.shapes.add_textbox(Inches(1), Inches(5.2), Inches(6), Inches(0.5))
    caption.text_frame.text = "Figure 1: Morning coffee in the keeper's kitchen."
    s3 = prs.slides.add_slide(prs.slide_layouts[5])
    s3.shapes.title.text = "Spending by item"
    shape = s3.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(1.5))
    for r, row in enumerate((("Item", "Pounds"), ("Lantern", "4200"), ("Paint", "900"))):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    s4 = prs.slides.add_slide(prs.slide_layouts[5])
    s4.shapes.title.text = "Visitors by season"
    data = CategoryChartData()
    data.categories = ["Spring", "Summer", "Autumn"]
    data.add_series("2025", (120, 840, 310))
    chart = s4.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(1.5), Inches(6), Inches(4), data)
    chart.chart.has_title = True
    chart.chart.chart_title.text_frame.text = "Museum visitors in 2025"
    prs.save(str(path))
    return path


#: The items of :func:`write_price_list_pdf`: (part number, description, unit price, stock); descriptions long
#: enough that some end close to the price column (PDFium then runs description and price into one segment).
PRICE_LIST = [
    (
        f"PN-{4100 + i * 7}",
        f"{name}{'' if i < 10 else f' (pack {i})'}",
        f"{(i * 37 % 890) / 100 + 0.05:.2f}",
        str(i * 53 % 900),
    )
    for i, name in enumerate(
        [
            "hex bolt M8x40",
            "washer M8",
            "nylon nut M6",
            "bearing 6204-2RS",
            "O-ring 20x2",
            "hinge 60 mm",
            "spring 0.8x10",
            "rivet 4x12",
            "cable tie 200 mm",
            "grommet 12 mm",
        ]
        * 3
    )
]


def write_price_list_pdf(path: Path) -> Path:
    """A supplier's price list: a title, a paragraph of terms, and a 30-item table set with white space alone
    (no line drawn: reportlab's plain ``Table``)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table

    ss = getSampleStyleSheet()
    terms = (
        "Prices exclude VAT. Orders above 250 EUR ship free within the EU; smaller orders pay a flat 9.90 EUR. "
        "Bearings carry a two-year warranty."
    )
    rows = [["Part number", "Description", "Unit price (EUR)", "Stock"], *[list(item) for item in PRICE_LIST]]
    story = [
        Paragraph("Acme Fasteners price list 2026", ss["Title"]),
        Paragraph(terms, ss["BodyText"]),
        Spacer(1, 8),
        Table(rows),
    ]
    SimpleDocTemplate(str(path), pagesize=A4).build(story)
    return path
