"""Jupyter notebooks are ingested: Markdown and code cells as text, printed output with them, a displayed pandas
DataFrame as a table of the table corpus; images, widgets and tracebacks are left out. Real notebooks written as
Jupyter stores them (the DataFrame's HTML is pandas' own ``_repr_html_``), the real bundled MiniLM, a real
PostgreSQL."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import sqlalchemy as sa

from universalrag.errors import IngestError
from universalrag.ingest.detect import detect
from universalrag.ingest.pipeline import ingest_paths
from universalrag.ingest.text.document import read_text_file
from universalrag.ingest.text_group import page_tables
from universalrag.retrieve import search_corpus
from universalrag.store import Store

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _notebook() -> dict[str, Any]:
    plans = pd.DataFrame(
        {
            "plan": ["monthly", "annual", "student"],
            "customers": [5210, 3890, 720],
            "churn_90d": ["18.2%", "6.1%", "9.4%"],
        }
    )
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "cells": [
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": _lines(
                    "# Churn analysis\n\nWhich customers cancel their subscription in the first 90 days, and on "
                    "which plan.\n\n| Quarter | Signups |\n|---|---|\n| Q1 | 2,400 |\n| Q2 | 3,100 |\n"
                ),
            },
            {
                "cell_type": "code",
                "execution_count": 1,
                "metadata": {},
                "source": _lines("import pandas as pd\nplans = pd.read_csv('plans.csv')\nprint('rows:', len(plans))"),
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ["rows: 3\n"]}],
            },
            {
                "cell_type": "code",
                "execution_count": 2,
                "metadata": {},
                "source": ["plans"],
                "outputs": [
                    {
                        "output_type": "execute_result",
                        "execution_count": 2,
                        "metadata": {},
                        "data": {"text/html": _lines(plans._repr_html_()), "text/plain": _lines(repr(plans))},
                    }
                ],
            },
            {
                "cell_type": "code",
                "execution_count": 3,
                "metadata": {},
                "source": ["plans.plot.bar()"],
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"image/png": PNG, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
                    },
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {
                            "application/vnd.jupyter.widget-view+json": {"model_id": "5f1e", "version_major": 2},
                            "text/plain": ["IntSlider(value=90, description='days')"],
                        },
                    },
                ],
            },
            {
                "cell_type": "code",
                "execution_count": 4,
                "metadata": {},
                "source": ["plans.loc['premium']"],
                "outputs": [
                    {
                        "output_type": "error",
                        "ename": "KeyError",
                        "evalue": "'premium'",
                        "traceback": [
                            "\x1b[0;31mKeyError\x1b[0m Traceback (most recent call last)",
                            "\x1b[0;32m<ipython-input-4>\x1b[0m in \x1b[0;36m<module>\x1b[0m",
                        ],
                    }
                ],
            },
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": _lines(
                    "## Findings\n\nMonthly customers churn three times as often as annual ones; the student "
                    "discount keeps churn under ten percent."
                ),
            },
        ],
    }


def _write(folder: Path, name: str, notebook: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(notebook if isinstance(notebook, str) else json.dumps(notebook, indent=1), encoding="utf-8")
    return path


def test_a_notebook_reads_as_its_cells_and_their_text_output(tmp_path: Path) -> None:
    path = _write(tmp_path, "churn.ipynb", _notebook())
    assert (detect(path).kind, detect(path).format) == ("text", "ipynb")
    doc = read_text_file(path)
    assert doc.title == "Churn analysis" and doc.metadata["headings"] == ["Churn analysis", "Findings"]
    text = doc.text
    assert "Which customers cancel their subscription in the first 90 days" in text
    assert "plans = pd.read_csv('plans.csv')" in text and "rows: 3" in text  # code and what it printed
    assert "monthly 5210 18.2%" in " ".join(text.split())  # the DataFrame, as shown
    assert "Monthly customers churn three times as often" in text
    for left_out in (
        "Traceback",
        "KeyError",
        "\x1b",
        PNG[:20],
        "<Figure size",
        "image/png",
        "kernelspec",
        "IntSlider",
        "model_id",
        "execution_count",
        "dataframe tbody",
    ):
        assert left_out not in text, left_out


def test_a_displayed_dataframe_and_a_markdown_table_are_tables(store: Store, minilm, tmp_path: Path) -> None:
    path = _write(tmp_path / "nb", "churn.ipynb", _notebook())
    tables = page_tables(path, "ipynb")
    assert [t.header for t in tables] == [["Quarter", "Signups"], ["column_1", "plan", "customers", "churn_90d"]]
    assert list(tables[1].rows()) == [
        ["0", "monthly", "5210", "18.2%"],
        ["1", "annual", "3890", "6.1%"],
        ["2", "student", "720", "9.4%"],
    ]
    assert ingest_paths(store, minilm, [path.parent]).ok
    units = store.tables.corpus(store.corpus("paragraph")).units
    with store.transaction() as conn:
        passages = " ".join(conn.execute(sa.select(units.c.content)).scalars())
    assert "student discount" in passages and "3890" not in passages  # the table is not cut into passages
    hit = search_corpus(store, minilm, "table", "what share of student plan customers churned?", k=1)[0]
    assert hit.uri.endswith("churn.ipynb") and "9.4%" in hit.matched_parts[0][1]


def test_an_nbformat_3_notebook_is_read(tmp_path: Path) -> None:
    old = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": "tides"},
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "heading", "level": 1, "source": ["Tide gauge"], "metadata": {}},
                    {
                        "cell_type": "markdown",
                        "source": ["The gauge records the water level every fifteen minutes."],
                        "metadata": {},
                    },
                    {
                        "cell_type": "code",
                        "language": "python",
                        "input": ["levels.max()"],
                        "prompt_number": 1,
                        "outputs": [{"output_type": "pyout", "prompt_number": 1, "text": ["4.82"], "metadata": {}}],
                        "metadata": {},
                    },
                ]
            }
        ],
    }
    doc = read_text_file(_write(tmp_path, "tides.ipynb", old))
    assert doc.title == "Tide gauge" and doc.text.split("\n\n") == [
        "Tide gauge",
        "The gauge records the water level every fifteen minutes.",
        "levels.max()",
        "4.82",
    ]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"cells": [{"cell_type": "markdown", "source": ["# Half', "is not a Jupyter notebook that can be read"),
        ('{"metadata": {}, "nbformat": 4}', "it has no list of cells"),
    ],
)
def test_a_broken_notebook_is_a_typed_error_and_stores_nothing(
    store: Store, minilm, tmp_path: Path, content: str, why: str
) -> None:
    path = _write(tmp_path / "nb", "broken.ipynb", content)
    with pytest.raises(IngestError, match=why) as raised:
        read_text_file(path)
    assert "jupyter nbconvert --to markdown" in str(raised.value)
    report = ingest_paths(store, minilm, [path.parent])
    assert [o.status for o in report.outcomes] == ["failed"]
    assert store.sources() == [] and sum(store.counts().values()) == 0
