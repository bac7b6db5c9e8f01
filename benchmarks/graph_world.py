"""A small seeded world whose facts about one thing are split over units that share only its name.

    python benchmarks/graph_world.py OUT_FOLDER [--structures 150] [--seed 7]

Structures (bridges, towers, dams, tunnels) each have a page saying who designed them, which firm built them
(a Markdown link to the firm's page), the town they stand in and the year they were completed. Where an engineer
was born and where they studied sits in a row of a CSV table of engineers (one table per specialty); the region of
a town in a row of ``towns.csv``; where a firm has its head office on the firm's own page. So "where was the
designer of the Varnholt Bridge born?" needs the structure's page and a table row that shares one name with it.
The word lists and question templates are in ``data/graph/world.json``; the names are built from syllables, so no
encoder has seen them. Questions come back as :class:`WorldQuestion` (``kind`` two-hop or single) with the strings
that the unit answering them holds (``needs``: all of them in one shown text).
"""

from __future__ import annotations

import csv
import json
import random
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "graph" / "world.json"


@dataclass(frozen=True)
class WorldQuestion:
    """One question over the world: its text, ``hops`` (1 single fact, 2 two facts joined by a name), its
    template ``family``, the strings one shown text must hold (``needs``), the thing it is about (``about``) and its
    ``split`` (tune or heldout)."""

    query: str
    hops: int
    family: str
    needs: tuple[str, ...]
    about: str
    split: str


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


class _Names:
    """Unique made-up names from syllables."""

    def __init__(self, rng: random.Random, syllables: list[str]) -> None:
        self.rng, self.syllables = rng, syllables
        self.used: set[str] = set()

    def word(self, parts: int = 2, ending: str = "") -> str:
        while True:
            core = "".join(self.rng.choice(self.syllables) for _ in range(parts)) + ending
            name = core[:1].upper() + core[1:]
            if name not in self.used and 5 <= len(name) <= 14:
                self.used.add(name)
                return name


def build_world(out: Path, *, structures: int = 150, seed: int = 7) -> list[WorldQuestion]:
    """Write the world's Markdown pages and CSV tables under ``out`` and return its questions. A structure's
    questions are held out when its number is a multiple of three (a third of the world, never tuned on)."""
    spec: dict[str, Any] = json.loads(DATA.read_text())
    rng = random.Random(seed)
    names = _Names(rng, spec["syllables"])
    n_towns, n_engineers, n_firms = max(8, structures // 5), max(12, structures * 2 // 3), max(6, structures // 5)
    towns = [
        {
            "name": names.word(2, rng.choice(spec["city_endings"])),
            "region": rng.choice(spec["regions"]),
            "founded": rng.randint(900, 1500),
            "population": rng.randint(2, 400) * 1000,
        }
        for _ in range(n_towns)
    ]
    engineers = [
        {
            "name": f"{rng.choice(spec['first_names'])} {names.word(2)}",
            "birthplace": rng.choice(towns)["name"],
            "born": rng.randint(1820, 1930),
            "university": rng.choice(spec["universities"]),
            "specialty": spec["specialties"][i % len(spec["specialties"])],
        }
        for i in range(n_engineers)
    ]
    firms = []
    for _ in range(n_firms):
        form = rng.choice(spec["firm_forms"])
        firms.append(
            {
                "name": form.format(a=names.word(2), b=names.word(2)),
                "headquarters": rng.choice(towns)["name"],
                "founded": rng.randint(1800, 1920),
            }
        )
    questions: list[WorldQuestion] = []
    pages, firm_pages = out / "structures", out / "firms"
    pages.mkdir(parents=True, exist_ok=True)
    firm_pages.mkdir(parents=True, exist_ok=True)
    for i in range(structures):
        designer = engineers[i % len(engineers)]
        kind = rng.choice(spec["kinds"][designer["specialty"]])
        town = rng.choice([t for t in towns if t["name"] != designer["birthplace"]])
        firm = rng.choice([f for f in firms if f["headquarters"] not in (town["name"], designer["birthplace"])])
        name = f"{names.word(2)} {kind}"
        year = max(designer["born"] + 28, rng.randint(1850, 1975))
        text = (
            f"# {name}\n\nThe {name} is a {rng.choice(spec['materials'])} {kind.lower()} in {town['name']}. "
            f"It was designed by {designer['name']} and built by [{firm['name']}](../firms/{_slug(firm['name'])}.md); "
            f"work on it was completed in {year}. {rng.choice(spec['fillers'])}\n"
        )
        (pages / f"{_slug(name)}.md").write_text(text)
        split = "heldout" if i % 3 == 0 else "tune"
        facts = {
            "designer_birthplace": (designer["name"], designer["birthplace"]),
            "designer_university": (designer["name"], designer["university"]),
            "city_region": (town["name"], town["region"]),
            "builder_headquarters": (firm["name"], firm["headquarters"]),
        }
        for family, templates in spec["two_hop"].items():
            query = rng.choice(templates).format(structure=name)
            questions.append(WorldQuestion(query, 2, family, facts[family], name, split))
        singles = {
            "structure_designer": ((name, designer["name"]), {"structure": name}),
            "structure_year": ((name, str(year)), {"structure": name}),
        }
        for family, (needs, values) in singles.items():
            query = rng.choice(spec["single"][family]).format(**values)
            questions.append(WorldQuestion(query, 1, family, needs, name, split))
    for j, firm in enumerate(firms):
        text = (
            f"# {firm['name']}\n\n{firm['name']} is a construction firm founded in {firm['founded']}. "
            f"Its head office is in {firm['headquarters']}, where it is headquartered to this day. "
            f"{rng.choice(spec['fillers'])}\n"
        )
        (firm_pages / f"{_slug(firm['name'])}.md").write_text(text)
        query = spec["single"]["firm_headquarters"][0].format(firm=firm["name"])
        split = "heldout" if j % 3 == 0 else "tune"
        questions.append(
            WorldQuestion(query, 1, "firm_headquarters", (firm["name"], firm["headquarters"]), firm["name"], split)
        )
    tables = out / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    for specialty in spec["specialties"]:
        rows = [e for e in engineers if e["specialty"] == specialty]
        with (tables / f"engineers_{specialty}.csv").open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["Engineer", "Birthplace", "Born", "University"])
            writer.writerows([e["name"], e["birthplace"], e["born"], e["university"]] for e in rows)
    for j, e in enumerate(engineers[:structures]):
        query = spec["single"]["engineer_birthplace"][0].format(engineer=e["name"])
        split = "heldout" if j % 3 == 0 else "tune"
        questions.append(WorldQuestion(query, 1, "engineer_birthplace", (e["name"], e["birthplace"]), e["name"], split))
    with (tables / "towns.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["Town", "Region", "Founded", "Population"])
        writer.writerows([t["name"], t["region"], t["founded"], t["population"]] for t in towns)
    for j, t in enumerate(towns):
        query = spec["single"]["city_region"][0].format(city=t["name"])
        split = "heldout" if j % 3 == 0 else "tune"
        questions.append(WorldQuestion(query, 1, "city_region", (t["name"], t["region"]), t["name"], split))
    return questions


def main(argv: list[str] | None = None) -> None:
    """Write the world into a folder and its questions into ``questions.jsonl`` there."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--structures", type=int, default=150)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    questions = build_world(args.out / "world", structures=args.structures, seed=args.seed)
    with (args.out / "questions.jsonl").open("w") as f:
        for q in questions:
            f.write(json.dumps(asdict(q)) + "\n")
    print(f"{len(questions)} questions, world in {args.out / 'world'}", file=sys.stderr)


if __name__ == "__main__":
    main()
