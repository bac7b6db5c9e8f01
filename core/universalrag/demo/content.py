"""What the demo knowledge base holds, as data: its tables, captioned photographs and video.

The Markdown documents live in ``texts/``; everything else is generated from the constants below by
:func:`universalrag.demo.build.build_demo_files`. The theme is a small town, Carrow, its volunteer-run
observatory on Meridian Hill, and a few unrelated neighbours (a glacier, a library, coffee roasting),
so that every corpus holds more than the one unit a demo question is about.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PHOTOS", "REPORT", "TABLES", "VIDEO", "Photo", "Report", "Table", "VideoScene", "VideoSpec"]


@dataclass(frozen=True)
class Table:
    """A CSV file: its name, header and rows (cells already formatted as text)."""

    file: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Photo:
    """A JPEG made from a bundled scikit-image sample, with the caption written to ``<file>.txt``."""

    file: str
    sample: str
    caption: str


@dataclass(frozen=True)
class VideoScene:
    """One shot of the slideshow video: a sample photograph held for ``seconds``, and its subtitle."""

    sample: str
    seconds: float
    subtitle: str


@dataclass(frozen=True)
class VideoSpec:
    """The demo video: file name, container title, frame size and rate, and its scenes in order."""

    file: str
    title: str
    scenes: tuple[VideoScene, ...]
    size: tuple[int, int] = (320, 240)
    fps: int = 24


@dataclass(frozen=True)
class Report:
    """A short PDF report: title, sections (heading, paragraphs), one captioned table and one captioned figure
    (a bundled sample photograph) that the text cites."""

    file: str
    title: str
    sections: tuple[tuple[str, tuple[str, ...]], ...]
    table_caption: str
    table: tuple[tuple[str, ...], ...]
    figure_sample: str
    figure_caption: str


TABLES: tuple[Table, ...] = (
    Table(
        file="meridian_hill_observing_log_2024.csv",
        header=(
            "month",
            "clear_nights",
            "public_evening_visitors",
            "variable_star_timings",
            "asteroid_positions",
            "meteors_recorded",
            "notes",
        ),
        rows=(
            ("January 2024", "9", "212", "148", "36", "402", "Quadrantids peak lost to cloud"),
            ("February 2024", "7", "186", "120", "28", "233", "Night-sky photography workshop weekend"),
            ("March 2024", "11", "264", "171", "44", "298", "Messier marathon on the 9th"),
            ("April 2024", "12", "301", "183", "51", "356", "Last public evening of the season on the 26th"),
            ("May 2024", "10", "0", "165", "47", "330", "Summer break: no public evenings"),
            ("June 2024", "6", "0", "92", "21", "188", "Short nights; mirror realuminised"),
            ("July 2024", "8", "0", "110", "30", "512", "Southern Delta Aquariids"),
            ("August 2024", "13", "0", "176", "49", "1288", "Perseids: 214 meteors on the night of the 12th"),
            ("September 2024", "12", "248", "190", "55", "371", "Public evenings resume on the 6th"),
            ("October 2024", "10", "277", "161", "40", "644", "Orionids; comet photographed on the 14th"),
            ("November 2024", "5", "133", "84", "19", "297", "Storm damage to the small dome's shutter"),
            ("December 2024", "8", "229", "131", "33", "967", "Geminids peak on the 13th"),
        ),
    ),
    Table(
        file="ostbreen_glacier_measurements.csv",
        header=("year", "front_retreat_m", "mass_balance_m_water_equivalent", "stakes_read", "survey_method"),
        rows=(
            ("2016", "31", "-0.92", "14", "satellite positioning and first drone survey"),
            ("2017", "18", "-0.41", "14", "drone survey"),
            ("2018", "44", "-1.37", "13", "drone survey"),
            ("2019", "27", "-0.78", "14", "drone survey"),
            ("2020", "12", "-0.22", "12", "satellite positioning only"),
            ("2021", "29", "-0.85", "14", "drone survey"),
            ("2022", "39", "-1.21", "15", "drone survey"),
            ("2023", "35", "-1.04", "15", "drone survey"),
            ("2024", "41", "-1.18", "15", "drone survey"),
        ),
    ),
)

PHOTOS: tuple[Photo, ...] = (
    Photo(
        file="chelsea_the_observatory_cat.jpg",
        sample="chelsea",
        caption="Chelsea, the tabby cat who lives at Meridian Hill Observatory, in close-up: a light brown coat "
        "with dark stripes on her forehead, large yellow-green eyes, a pink nose and long white whiskers, "
        "looking to one side.",
    ),
    Photo(
        file="falcon9_dscovr_launch_pad.jpg",
        sample="rocket",
        caption="A SpaceX Falcon 9 rocket standing on Launch Complex 40 at Cape Canaveral at dusk before it "
        "launched the DSCOVR space weather satellite in 2015: a tall white rocket between four lightning "
        "masts, lit by starburst floodlights under a deep blue sky.",
    ),
    Photo(
        file="astronaut_eileen_collins.jpg",
        sample="astronaut",
        caption="Official NASA portrait of astronaut Eileen Collins, the first woman to pilot and later command a "
        "Space Shuttle: smiling, short brown hair, in an orange launch-and-entry suit with mission patches, "
        "a black helmet beside her, the American flag and a model shuttle behind her.",
    ),
    Photo(
        file="greek_coins_from_pompeii.jpg",
        sample="coins",
        caption="Ancient Greek silver and bronze coins found at Pompeii, laid out in four rows on a grey cloth in "
        "a black-and-white museum photograph; most show the head of a god or goddess in profile.",
    ),
    Photo(
        file="espresso_at_carrow_cafe.jpg",
        sample="coffee",
        caption="An espresso with golden crema in a glossy red-brown cup on a matching saucer, a silver teaspoon "
        "resting beside it, on a worn wooden table at the café in Carrow that roasts its own beans.",
    ),
)

VIDEO = VideoSpec(
    file="night_sky_photography.mp4",
    title="Photographing the night sky at Meridian Hill",
    scenes=(
        VideoScene(
            "camera",
            5.0,
            "First, set your camera on a sturdy tripod, switch the lens to manual focus and focus on a "
            "distant streetlight.",
        ),
        VideoScene(
            "coffee",
            4.0,
            "Then pour a cup of coffee and wait twenty minutes while the sky darkens and your eyes adapt to the dark.",
        ),
        VideoScene(
            "moon",
            5.0,
            "Start with the Moon. It is bright, so use a short exposure of 1/250 of a second at ISO 100 "
            "to keep the craters sharp.",
        ),
        VideoScene(
            "hubble_deep_field",
            5.0,
            "For faint galaxies, take forty exposures of 30 seconds each and stack them on the computer afterwards.",
        ),
        VideoScene(
            "chelsea",
            4.0,
            "Before you pack up, check that Chelsea the observatory cat has not climbed into your camera bag.",
        ),
    ),
)


REPORT = Report(
    file="carrow_ferry_annual_report_2024.pdf",
    title="Carrow Ferry Company: Annual Report 2024",
    sections=(
        (
            "1 The year in brief",
            (
                "The Carrow Ferry Company runs the crossing between Carrow harbour and Gull Island with one vessel, "
                "the Kittiwake, built in 1988 and refitted in the winter of 2023.",
                "Passenger numbers recovered fully in 2024: the ferry carried more people than in any year since the "
                "company was founded, helped by the observatory's public evenings on the island.",
            ),
        ),
        (
            "2 Sailings and passengers",
            (
                "Table 1 lists the sailings and passengers of each quarter. Storms cancelled most of the crossings "
                "lost in the first quarter.",
            ),
        ),
        (
            "3 The Kittiwake",
            (
                "Figure 1 shows the Kittiwake's new wheelhouse after the refit, with the radar mast moved aft.",
                "The refit replaced both engines, so the crossing now takes 22 minutes instead of 31.",
            ),
        ),
    ),
    table_caption="Table 1: Sailings and passengers by quarter, 2024",
    table=(
        ("Quarter", "Sailings", "Cancelled", "Passengers"),
        ("Q1", "412", "37", "9,840"),
        ("Q2", "498", "4", "21,305"),
        ("Q3", "551", "2", "33,912"),
        ("Q4", "430", "19", "12,076"),
    ),
    figure_sample="rocket",
    figure_caption="Figure 1: The Kittiwake's wheelhouse after the 2023 refit.",
)
