"""A small seeded world whose facts about one thing are split over units that share only its name.

    python benchmarks/graph_world.py OUT_FOLDER [--structures 150] [--seed 7]

Structures (bridges, towers, dams, tunnels) each have a page saying who designed them, which firm built them
(a Markdown link to the firm's page), the town they stand in and the year they were completed. Where an engineer
was born and where they studied sits in a row of a CSV table of engineers (one table per specialty); the region of
a town in a row of ``towns.csv``; where a firm has its head office on the firm's own page. So "where was the
designer of the Varnholt Bridge born?" needs the structure's page and a table row that shares one name with it.
With ``media`` (the default) the world also has survey reports (PDF), museum pages (HTML) and event videos
(:func:`build_media`). The word lists and question templates are in ``data/graph/world.json`` and
``data/graph/media.json``; the names are built from syllables, so no
encoder has seen them. Questions come back as :class:`WorldQuestion` (``kind`` two-hop or single) with the strings
that the unit answering them holds (``needs``: all of them in one shown text).
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "graph" / "world.json"
MEDIA = Path(__file__).resolve().parent / "data" / "graph" / "media.json"
#: The bundled photographs a survey figure or a video scene shows (scikit-image's samples, no download).
PHOTOS = ("astronaut", "camera", "chelsea", "coffee", "rocket")


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


def build_world(out: Path, *, structures: int = 150, seed: int = 7, media: bool = True) -> list[WorldQuestion]:
    """Write the world's Markdown pages and CSV tables under ``out`` and return its questions. A structure's
    questions are held out when its number is a multiple of three (a third of the world, never tuned on).
    ``media``: also the survey reports (PDF), museum pages (HTML) and event videos of :func:`build_media`."""
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
    structure_names: list[str] = []
    pages, firm_pages = out / "structures", out / "firms"
    pages.mkdir(parents=True, exist_ok=True)
    firm_pages.mkdir(parents=True, exist_ok=True)
    for i in range(structures):
        designer = engineers[i % len(engineers)]
        kind = rng.choice(spec["kinds"][designer["specialty"]])
        town = rng.choice([t for t in towns if t["name"] != designer["birthplace"]])
        firm = rng.choice([f for f in firms if f["headquarters"] not in (town["name"], designer["birthplace"])])
        name = f"{names.word(2)} {kind}"
        structure_names.append(name)
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
    if media:
        questions += build_media(out, structure_names, towns, spec, names, rng)
    return questions


def _split(i: int) -> str:
    return "heldout" if i % 3 == 0 else "tune"


def _person(rng: random.Random, names: _Names, spec: dict[str, Any], towns: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": f"{rng.choice(spec['first_names'])} {names.word(2)}",
        "birthplace": rng.choice(towns)["name"],
        "born": rng.randint(1840, 1950),
        "university": rng.choice(spec["universities"]),
    }


def _person_text(person: dict[str, Any], job: str, filler: str) -> str:
    return (
        f"{person['name']} was a {job}, born in {person['birthplace']} in {person['born']}. "
        f"{person['name']} studied at {person['university']} before settling down to work. {filler}"
    )


def _person_page(folder: Path, person: dict[str, Any], job: str, filler: str) -> None:
    """A Markdown page about ``person`` in ``folder``, which names nothing else of the world but their town and
    university."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{_slug(person['name'])}.md").write_text(
        f"# {person['name']}\n\n{_person_text(person, job, filler)}\n", encoding="utf-8"
    )


def _birthplace_question(person: dict[str, Any], media: dict[str, Any], split: str) -> WorldQuestion:
    """The single-fact question asking where ``person`` was born (their own page says)."""
    query = media["single"]["person_birthplace"][0].format(person=person["name"])
    return WorldQuestion(query, 1, "person_birthplace", (person["name"], person["birthplace"]), person["name"], split)


def _person_questions(
    family: str, person: dict[str, Any], templates: dict[str, list[str]], split: str, rng: random.Random, **named: str
) -> list[WorldQuestion]:
    """The two-hop birthplace and university questions about ``person``, reached from what ``named`` names."""
    return [
        WorldQuestion(
            rng.choice(templates[f"{family}_{fact}"]).format(**named),
            2,
            f"{family}_{fact}",
            (person["name"], person[key]),
            person["name"],
            split,
        )
        for fact, key in (("birthplace", "birthplace"), ("university", "university"))
    ]


def build_media(
    out: Path,
    structures: list[str],
    towns: list[dict[str, Any]],
    spec: dict[str, Any],
    names: _Names,
    rng: random.Random,
) -> list[WorldQuestion]:
    """The world's media under ``out`` and their questions (templates in ``data/graph/media.json``):

    - ``reports/``: survey reports (PDF, reportlab), each with three captioned photographs of the world's
      structures (of a third of them, at least six: "Figure 2: The Varnholt Bridge seen from the east bank.") and,
      in a later section, a note per figure saying who took it ("Figure 2 was taken by ..."), which never names the
      structure: a figure and the paragraph citing it, asked both ways (``figure_photographer``,
      ``figure_subject``), and the photographer's own page (Markdown, in ``people/``) reached through them
      (``figure_birthplace``);
    - ``site/``: museum pages (HTML) linking to their first curator's page by the words "its first curator"; the
      curator's page never names the museum (``link_birthplace``, ``link_university``);
    - ``videos/``: subtitled videos of local events (PyAV, a sidecar ``.srt``) whose first cue names the event and a
      person, and a Markdown page about that person (in ``people/``) that never names the event (``clip_birthplace``,
      ``clip_university``).

    Every third report figure, museum and video is held out."""
    kit = _Kit(towns, json.loads(MEDIA.read_text()), spec, names, rng)
    return [
        *_reports(kit, out / "reports", structures),
        *_museums(kit, out / "site", count=max(3, len(structures) // 5)),
        *_videos(kit, out / "videos", count=max(3, len(structures) // 6)),
    ]


@dataclass(frozen=True)
class _Kit:
    """What the media writers share: the world's towns, the media templates, the world's word lists, its names and
    its random generator."""

    towns: list[dict[str, Any]]
    media: dict[str, Any]
    spec: dict[str, Any]
    names: _Names
    rng: random.Random


def _reports(kit: _Kit, out: Path, structures: list[str]) -> list[WorldQuestion]:
    towns, media, spec, names, rng = kit.towns, kit.media, kit.spec, kit.names, kit.rng
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for support.media
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Image, PageBreak, Paragraph, SimpleDocTemplate, Spacer
    from support.media import photo

    out.mkdir(parents=True, exist_ok=True)
    ss = getSampleStyleSheet()
    pictures: dict[str, io.BytesIO] = {}
    questions: list[WorldQuestion] = []
    n = 0
    photographed = max(6, len(structures) // 9 * 3)  # a third of the structures, three to a report
    subjects = rng.sample(structures, min(photographed, len(structures) // 3 * 3))
    for r in range(0, len(subjects), 3):
        title = f"{names.word(2)} {rng.choice(media['report_subjects'])} Survey"
        year = rng.randint(1950, 1990)
        story: list[Any] = [Paragraph(title, ss["Title"]), Paragraph("1 Purpose", ss["Heading1"])]
        story += [Paragraph(" ".join(rng.sample(media["report_fillers"], 2)), ss["BodyText"]), PageBreak()]
        story.append(Paragraph("2 Photographs", ss["Heading1"]))
        notes = []
        for f, structure in enumerate(subjects[r : r + 3], start=1):
            label, shot = f"Figure {f}", rng.choice(PHOTOS)
            if shot not in pictures:
                pictures[shot] = io.BytesIO()
                photo(shot, size=(240, 160)).save(pictures[shot], format="PNG")
            pictures[shot].seek(0)
            image = io.BytesIO(pictures[shot].getvalue())
            person = _person(rng, names, spec, towns)
            photographer = person["name"]
            _person_page(out.parent / "people", person, rng.choice(media["person_jobs"]), rng.choice(spec["fillers"]))
            caption = f"{label}: The {structure} {rng.choice(media['views'])}."
            story += [Image(image, width=180, height=120), Paragraph(caption, ss["BodyText"]), Spacer(1, 10)]
            note = rng.choice(media["photo_notes"]).format(label=label, photographer=photographer, year=year)
            notes.append(note)
            split = _split(n)
            n += 1
            ask = media["two_hop"]
            questions.append(
                WorldQuestion(
                    rng.choice(ask["figure_photographer"]).format(structure=structure),
                    2,
                    "figure_photographer",
                    (label, photographer),
                    structure,
                    split,
                )
            )
            questions.append(
                WorldQuestion(
                    rng.choice(ask["figure_subject"]).format(photographer=photographer),
                    2,
                    "figure_subject",
                    (label, structure),
                    structure,
                    split,
                )
            )
            questions.append(
                WorldQuestion(
                    rng.choice(ask["figure_birthplace"]).format(structure=structure),
                    2,
                    "figure_birthplace",
                    (photographer, person["birthplace"]),
                    structure,
                    split,
                )
            )
        story += [PageBreak(), Paragraph("3 Notes on the photographs", ss["Heading1"])]
        story += [Paragraph(note, ss["BodyText"]) for note in notes]
        story += [Paragraph("4 Method", ss["Heading1"]), Paragraph(rng.choice(media["report_fillers"]), ss["BodyText"])]
        SimpleDocTemplate(str(out / f"{_slug(title)}.pdf"), pagesize=A4, title=title).build(story)
    return questions


def _museums(kit: _Kit, out: Path, *, count: int) -> list[WorldQuestion]:
    towns, media, spec, names, rng = kit.towns, kit.media, kit.spec, kit.names, kit.rng
    out.mkdir(parents=True, exist_ok=True)
    questions: list[WorldQuestion] = []
    for m in range(count):
        museum = f"{names.word(2)} {rng.choice(media['museum_kinds'])}"
        town, opened = rng.choice(towns)["name"], rng.randint(1850, 1960)
        curator = _person(rng, names, spec, [t for t in towns if t["name"] != town])
        page = f"curator-{_slug(curator['name'])}.html"
        topic = rng.choice(media["museum_topics"])
        (out / f"{_slug(museum)}.html").write_text(
            f"<html><head><title>{museum}</title></head><body><h1>{museum}</h1>"
            f"<p>The {museum} opened in {opened} in {town} and holds a collection of {topic}. "
            f'Much of it was gathered by <a href="{page}">its first curator</a>, who travelled widely to find it.</p>'
            f"<p>{rng.choice(spec['fillers'])}</p></body></html>",
            encoding="utf-8",
        )
        job = rng.choice(media["person_jobs"])
        (out / page).write_text(
            f"<html><head><title>{curator['name']}</title></head><body><h1>{curator['name']}</h1>"
            f"<p>{_person_text(curator, job, rng.choice(spec['fillers']))}</p></body></html>",
            encoding="utf-8",
        )
        split = _split(m)
        questions += _person_questions("link", curator, media["two_hop"], split, rng, museum=museum)
        single = media["single"]
        questions.append(
            WorldQuestion(
                single["museum_opened"][0].format(museum=museum),
                1,
                "museum_opened",
                (museum, str(opened)),
                museum,
                split,
            )
        )
        questions.append(_birthplace_question(curator, media, split))
    return questions


def _videos(kit: _Kit, out: Path, *, count: int) -> list[WorldQuestion]:
    towns, media, spec, names, rng = kit.towns, kit.media, kit.spec, kit.names, kit.rng
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for support.video
    from support.video import write_video

    out.mkdir(parents=True, exist_ok=True)
    questions: list[WorldQuestion] = []
    for v in range(count):
        event = f"{names.word(2)} {rng.choice(media['events'])}"
        person = _person(rng, names, spec, towns)
        action = rng.choice(media["event_roles"]).format(person=person["name"])
        cues = [
            (0.2, 2.8, f"At the {event}, {action}."),
            (3.2, 5.8, rng.choice(media["event_fillers"])),
        ]
        scenes = [(shot, 3.0) for shot in rng.sample(PHOTOS, 2)]
        write_video(out / f"{_slug(event)}.mp4", scenes, fps=10, size=(160, 120), cues=cues, sidecar="srt")
        _person_page(out.parent / "people", person, rng.choice(media["person_jobs"]), rng.choice(spec["fillers"]))
        split = _split(v)
        questions += _person_questions("clip", person, media["two_hop"], split, rng, event=event)
        questions.append(_birthplace_question(person, media, split))
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
