"""A wiki page's furniture is neither a data table nor text: navigation boxes (Wikipedia's ``table.navbox``, their
group names in header cells, so the rule for tables with headers kept them as data), hidden person data and
message boxes. On the 2014 page of Kazakhstan, 13 tables came out, ten of them navigation boxes titled
"Government (2)" to "(7)", and they were found for questions about other pages. The synthetic page is written in
the test in MediaWiki's shape (our own words); the real one is read from the WikiTableQuestions
pages when present (``support.shared_data``)."""

from __future__ import annotations

from pathlib import Path

from support.shared_data import WIKITABLES, WIKITABLES_PAGES, skip_unless

from universalrag.ingest.tables import read_tables
from universalrag.ingest.text import parse_text

NAVBOX = """<table cellspacing="0" class="navbox" style="border-spacing:0;"><tr><td style="padding:2px;">
<table cellspacing="0" class="nowraplinks collapsible autocollapse navbox-inner">
<tr><th scope="col" class="navbox-title" colspan="2"><a href="/wiki/T:Lakes">v</a> <a href="/wiki/TT:Lakes">t</a>
<a href="/wiki/E:Lakes">e</a> <a href="/wiki/Lakes_of_Ardmoor">Lakes of Ardmoor</a></th></tr>
<tr><th scope="row" class="navbox-group">Northern lakes</th><td class="navbox-list"><div>
<a href="/wiki/Lake_Orrin">Lake Orrin</a> · <a href="/wiki/Lake_Velt">Lake Velt</a> ·
<a href="/wiki/Tarn_Hollow">Tarn Hollow</a></div></td></tr>
<tr><th scope="row" class="navbox-group">Southern lakes</th><td class="navbox-list"><div>
<a href="/wiki/Lake_Brisk">Lake Brisk</a> · <a href="/wiki/Lake_Sorrel">Lake Sorrel</a> ·
<a href="/wiki/Mere_Dunlin">Mere Dunlin</a></div></td></tr></table></td></tr></table>"""

PAGE = f"""<html><head><title>Lake Orrin - Wikipedia</title></head><body><h1>Lake Orrin</h1>
<table class="infobox geography vcard"><tr><th colspan="2">Lake Orrin</th></tr>
<tr><th scope="row">Area</th><td>41 km2</td></tr><tr><th scope="row">Max depth</th><td>63 m</td></tr></table>
<p>Lake Orrin is the deepest lake of the northern plateau, fed by three glacial streams.</p>
<h2>Fish stocks</h2>
<table class="wikitable"><tr><th>Year</th><th>Trout</th><th>Char</th></tr>
<tr><td>2009</td><td>1,200</td><td>430</td></tr><tr><td>2011</td><td>1,350</td><td>410</td></tr></table>
<h2>External links</h2>
<table class="metadata mbox-small plainlinks"><tr><td><img alt="" src="commons.png"></td>
<td>Wikimedia Commons has media related to <a href="/c/Lake_Orrin"><i>Lake Orrin</i></a>.</td></tr></table>
{NAVBOX}
<table id="persondata" class="persondata" style="display:none;"><tr><th>Name</th><td>Orrin, Lake</td></tr>
<tr><th>Short description</th><td>Glacial lake</td></tr></table></body></html>"""


def test_navigation_boxes_person_data_and_message_boxes_are_no_tables(tmp_path: Path) -> None:
    page = tmp_path / "Lake Orrin.html"
    page.write_text(PAGE, encoding="utf-8")
    tables = read_tables(page)
    assert [t.header for t in tables][1:] == [["Year", "Trout", "Char"]]  # the infobox, then the data table
    assert "Area" in " ".join(" ".join(r) for r in next(iter(tables[0].batches(50))))
    assert not any("Lake Brisk" in " ".join(" ".join(r) for b in t.batches(50) for r in b) for t in tables)


def test_navigation_boxes_and_person_data_are_no_text() -> None:
    doc = parse_text(PAGE.encode(), format="html", name="Lake Orrin.html")
    assert "the deepest lake of the northern plateau" in doc.text and "Fish stocks" in doc.text
    for furniture in ("Lake Brisk", "Southern lakes", "Glacial lake", "Orrin, Lake"):
        assert furniture not in doc.text, furniture


@skip_unless(WIKITABLES_PAGES)
def test_a_real_page_keeps_its_data_tables_and_loses_its_navigation_boxes() -> None:
    titles = [t.title for t in read_tables(WIKITABLES / "pages" / "Kazakhstan.html")]
    assert "Public holidays" in titles and "Professions of faith in Kazakhstan by ethnicity[citation needed]" in titles
    assert not any(t.startswith("Government") or t == "Demographics" for t in titles), titles
    assert len(titles) <= 4, titles  # the infobox and the page's data tables
