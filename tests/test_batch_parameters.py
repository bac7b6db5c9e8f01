"""Array parameters of driver-ready statements: ids and part numbers go to PostgreSQL as one array literal.

psycopg dumps a Python list element by element (230 µs for the 75 part keys of a table probe), so the search path
writes the literal itself (:func:`universalrag.store.batch.array_parameter`). Whatever a string holds, it must stay
one element: the literal is read by the real server here."""

from __future__ import annotations

import pytest

from universalrag.store import Store
from universalrag.store.batch import Raw, array_parameter, run_steps

AWKWARD = [
    "plain",
    "with space",
    'a "quoted" word',
    "back\\slash",
    "comma,inside",
    "{braces}",
    "NULL",
    "",
    "naïve 東京",
    "trailing\\",
    "c7b1d2e0-0000-4000-8000-000000000001",
]


def _read(store: Store, sql: str, params: dict[str, object]) -> list[dict[str, object]]:
    def one():  # type: ignore[no-untyped-def]
        return (yield Raw(sql, params))

    with store.engine.connect() as conn:
        return list(run_steps(conn, [one()])[0])


def test_strings_and_numbers_round_trip_through_the_server(store: Store) -> None:
    rows = _read(
        store,
        "SELECT CAST(%(texts)s::TEXT[] AS TEXT[]) AS texts, CAST(%(ords)s::INTEGER[] AS INTEGER[]) "
        "AS ords, cardinality(CAST(%(none)s::TEXT[] AS TEXT[])) AS empty",
        {
            "texts": array_parameter(AWKWARD),
            "ords": array_parameter([0, 7, -3, 2**31 - 1]),
            "none": array_parameter([]),
        },
    )
    assert rows[0]["texts"] == AWKWARD  # "NULL" stays a string, quotes and backslashes stay themselves
    assert rows[0]["ords"] == [0, 7, -3, 2**31 - 1]
    assert rows[0]["empty"] == 0


def test_ids_select_the_units_they_name(store: Store) -> None:
    """As the search statements use it: unit ids cast to UUID[] and compared with ``= ANY``."""
    ids = ["c7b1d2e0-0000-4000-8000-000000000001", "c7b1d2e0-0000-4000-8000-000000000002"]
    rows = _read(
        store,
        "SELECT count(*) AS n FROM unnest(CAST(%(all)s::TEXT[] AS UUID[])) AS u(id) "
        "WHERE u.id = ANY(CAST(%(some)s::TEXT[] AS UUID[]))",
        {"all": array_parameter(ids), "some": array_parameter(ids[1:])},
    )
    assert rows[0]["n"] == 1


@pytest.mark.parametrize("bad", [[None], [1.5], [True], [["nested"]]])
def test_anything_but_strings_and_whole_numbers_is_refused(bad: list[object]) -> None:
    with pytest.raises(TypeError, match="strings or whole numbers"):
        array_parameter(bad)  # type: ignore[arg-type]
