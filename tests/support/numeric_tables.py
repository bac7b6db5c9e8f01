"""CSV files of numeric tables with thousands of near-identical rows (the data HNSW recall suffers on), written at test
time.

Numeric tables with the columns and sizes of scikit-learn's bundled datasets (iris, wine, breast cancer,
diabetes, a slice of California housing), filled with seeded random values in each column's real range: what
matters for the index is their shape (thousands of rows that differ only in their numbers, so their row vectors
are nearly identical), not the exact values. Next to them, two small text tables in the layout of Debian's
``distro-info-data`` CSVs (version, codename, series, created, release, eol), with public release facts.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

__all__ = ["UBUNTU_ROWS", "write_numeric_tables", "write_release_tables"]

#: The ten "mean" features of the breast-cancer set (its 20 "error" and "worst" columns would only make each row
#: slower to embed).
_BREAST_CANCER = [
    f"mean {name}"
    for name in (
        "radius",
        "texture",
        "perimeter",
        "area",
        "smoothness",
        "compactness",
        "concavity",
        "concave points",
        "symmetry",
        "fractal dimension",
    )
]

#: (file name, rows, columns as (name, low, high, decimals)), plus an optional label column.
_NUMERIC: list[tuple[str, int, list[tuple[str, float, float, int]], tuple[str, list[str]] | None]] = [
    (
        "iris.csv",
        150,
        [
            ("sepal length (cm)", 4.3, 7.9, 1),
            ("sepal width (cm)", 2.0, 4.4, 1),
            ("petal length (cm)", 1.0, 6.9, 1),
            ("petal width (cm)", 0.1, 2.5, 1),
        ],
        ("species", ["setosa", "versicolor", "virginica"]),
    ),
    (
        "wine.csv",
        178,
        [
            (name, low, high, 2)
            for name, low, high in [
                ("alcohol", 11.0, 14.8),
                ("malic_acid", 0.7, 5.8),
                ("ash", 1.4, 3.2),
                ("alcalinity_of_ash", 10.6, 30.0),
                ("magnesium", 70, 162),
                ("total_phenols", 0.98, 3.88),
                ("flavanoids", 0.34, 5.08),
                ("nonflavanoid_phenols", 0.13, 0.66),
                ("proanthocyanins", 0.41, 3.58),
                ("color_intensity", 1.28, 13.0),
                ("hue", 0.48, 1.71),
                ("od280/od315_of_diluted_wines", 1.27, 4.0),
                ("proline", 278, 1680),
            ]
        ],
        ("class", ["class_0", "class_1", "class_2"]),
    ),
    (
        "breast_cancer.csv",
        569,
        [(name, 0.01, 250.0, 4) for name in _BREAST_CANCER],
        ("target", ["malignant", "benign"]),
    ),
    (
        "diabetes.csv",
        442,
        [(name, -0.11, 0.2, 6) for name in ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")]
        + [("target", 25, 346, 0)],
        None,
    ),
    (
        "california_housing.csv",
        2000,
        [
            ("MedInc", 0.5, 15.0, 4),
            ("HouseAge", 1, 52, 0),
            ("AveRooms", 0.85, 141.9, 6),
            ("AveBedrms", 0.33, 34.1, 6),
            ("Population", 3, 35682, 0),
            ("AveOccup", 0.69, 1243.3, 6),
            ("Latitude", 32.54, 41.95, 2),
            ("Longitude", -124.35, -114.31, 2),
            ("MedHouseVal", 0.15, 5.0, 3),
        ],
        None,
    ),
]

#: Ubuntu releases as in distro-info-data's ubuntu.csv (version, codename, series, created, release, eol).
UBUNTU_ROWS = [
    ("18.04 LTS", "Bionic Beaver", "bionic", "2017-10-19", "2018-04-26", "2023-05-31"),
    ("18.10", "Cosmic Cuttlefish", "cosmic", "2018-04-26", "2018-10-18", "2019-07-18"),
    ("19.04", "Disco Dingo", "disco", "2018-10-18", "2019-04-18", "2020-01-23"),
    ("19.10", "Eoan Ermine", "eoan", "2019-04-18", "2019-10-17", "2020-07-17"),
    ("20.04 LTS", "Focal Fossa", "focal", "2019-10-17", "2020-04-23", "2025-05-29"),
    ("20.10", "Groovy Gorilla", "groovy", "2020-04-23", "2020-10-22", "2021-07-22"),
    ("21.04", "Hirsute Hippo", "hirsute", "2020-10-22", "2021-04-22", "2022-01-20"),
    ("21.10", "Impish Indri", "impish", "2021-04-22", "2021-10-14", "2022-07-14"),
    ("22.04 LTS", "Jammy Jellyfish", "jammy", "2021-10-14", "2022-04-21", "2027-06-01"),
    ("22.10", "Kinetic Kudu", "kinetic", "2022-04-21", "2022-10-20", "2023-07-20"),
    ("23.04", "Lunar Lobster", "lunar", "2022-10-20", "2023-04-20", "2024-01-25"),
    ("23.10", "Mantic Minotaur", "mantic", "2023-04-20", "2023-10-12", "2024-07-11"),
    ("24.04 LTS", "Noble Numbat", "noble", "2023-10-12", "2024-04-25", "2029-05-31"),
]

_DEBIAN_ROWS = [
    ("9", "Stretch", "stretch", "2015-04-25", "2017-06-17", "2020-07-18"),
    ("10", "Buster", "buster", "2017-06-17", "2019-07-06", "2022-09-10"),
    ("11", "Bullseye", "bullseye", "2019-07-06", "2021-08-14", "2024-08-14"),
    ("12", "Bookworm", "bookworm", "2021-08-14", "2023-06-10", "2026-06-10"),
    ("13", "Trixie", "trixie", "2023-06-10", "2025-08-09", ""),
]

_RELEASE_HEADER = ("version", "codename", "series", "created", "release", "eol")


def write_numeric_tables(directory: Path, *, seed: int = 0, scale: float = 1.0) -> list[Path]:
    """Write the numeric CSVs into ``directory`` (``scale`` multiplies every table's row count); returns their
    paths."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, rows, columns, label in _NUMERIC:
        n = max(1, round(rows * scale))
        path = directory / name
        with path.open("w", newline="", encoding="utf-8") as f:
            out = csv.writer(f)
            out.writerow([c[0] for c in columns] + ([label[0]] if label else []))
            values = [np.round(rng.uniform(low, high, size=n), decimals) for _, low, high, decimals in columns]
            for i in range(n):
                row = [f"{v[i]:.{c[3]}f}" for v, c in zip(values, columns, strict=True)]
                out.writerow(row + ([label[1][int(rng.integers(len(label[1])))]] if label else []))
        paths.append(path)
    return paths


def write_release_tables(directory: Path) -> list[Path]:
    """Write ``ubuntu.csv`` and ``debian.csv`` (distro-info-data's layout) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, rows in (("ubuntu.csv", UBUNTU_ROWS), ("debian.csv", _DEBIAN_ROWS)):
        path = directory / name
        with path.open("w", newline="", encoding="utf-8") as f:
            out = csv.writer(f)
            out.writerow(_RELEASE_HEADER)
            out.writerows(rows)
        paths.append(path)
    return paths
