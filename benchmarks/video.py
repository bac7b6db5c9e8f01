"""Video segmentation speed: seconds of video planned and sampled per wall-clock second, at 360p and 720p.

    python benchmarks/video.py [--quick] [--seconds 120] [--repeat 3] [--keep DIR]

Per resolution (640x360 and 1280x720, 25 fps H.264) writes a video of ``--seconds`` (scikit-image photographs,
each held 4-12 s with a slow pan and per-frame noise so decoding costs what real footage costs) with a sidecar
.srt, then times:

* ``plan``   probe (SHA-256, header, first and last frames) + transcript + PySceneDetect + clip shaping,
             i.e. everything ``plan_video`` does without ASR;
* ``frames`` decoding the planned frames (8 per clip, 32 per video) with ``iter_frames``.

Prints the best of ``--repeat`` runs, the detected cut error against the true cuts, and the real-time ratio
of plan + frames (goal: >= 10x real time at 360p). ``--quick``: 20-second videos, one run.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for support.video

from machine import figure, finish, log, machine_line, parser, save_png, timed
from support.video import write_video

from universalrag.ingest.video import VideoOptions, iter_frames, plan_video

PHOTOS = ["astronaut", "coffee", "rocket", "camera", "chelsea", "hubble_deep_field", "immunohistochemistry", "retina"]
SIZES = {"360p": (640, 360), "720p": (1280, 720)}


def make_video(folder: Path, seconds: float, size: tuple[int, int]) -> tuple[Path, list[float], float]:
    """Write the benchmark video; returns its path, true cut times and duration."""
    rng = random.Random(1)
    scenes, total = [], 0.0
    while total < seconds:
        hold = min(rng.uniform(4, 12), max(1.0, seconds - total))
        scenes.append((PHOTOS[len(scenes) % len(PHOTOS)], hold))
        total += hold
    cues = [
        (s + 0.5, s + 3.0, f"Scene {i} narration.")
        for i, s in enumerate([0.0, *[sum(h for _n, h in scenes[:k]) for k in range(1, len(scenes))]])
    ]
    written = write_video(
        folder / f"bench{size[1]}p.mp4",
        scenes,
        fps=25,
        size=size,
        motion=20,
        noise=6,
        gop=50,
        cues=cues,
        sidecar="srt",
        audio="tones",
    )
    return written.path, written.cut_times, written.duration_s


def measure(path: Path, cuts: list[float], duration: float, repeat: int) -> dict[str, float]:
    """Best-of-``repeat`` plan and frame-decoding times, as multiples of real time, and the worst cut error."""
    options = VideoOptions(min_clip_s=2.0, max_clip_s=180.0)
    plan_s, frames_s, plan, n_frames = [], [], None, 0
    for _ in range(max(1, repeat)):
        t, plan = timed(plan_video, path, options=options)
        plan_s.append(t)
        times = [t for clip in plan.clips for t in clip.frame_times] + list(plan.video_frame_times)
        t, n_frames = timed(lambda: sum(1 for _ in iter_frames(path, times)))  # noqa: B023 - called at once
        frames_s.append(t)
    assert plan is not None
    found = [clip.start_s for clip in plan.clips[1:]]
    errors = [min(abs(f - c) for f in found) for c in cuts] if found else []
    best_plan, best_frames = min(plan_s), min(frames_s)
    return {
        "clips": len(plan.clips),
        "frames": n_frames,
        "max_cut_error_ms": max(errors, default=0.0) * 1000,
        "x_plan": duration / best_plan,
        "x_frames": duration / best_frames,
        "x_realtime": duration / (best_plan + best_frames),
        "plan_s": best_plan,
        "frames_s": best_frames,
    }


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seconds", type=float, help="length of the generated videos (default 120; --quick 20)")
    ap.add_argument("--repeat", type=int, help="runs to take the best of (default 3; --quick 1)")
    ap.add_argument("--keep", type=Path, default=None, help="write the videos here instead of a temp dir")
    args = ap.parse_args()
    seconds = args.seconds or (20.0 if args.quick else 120.0)
    repeat = args.repeat or (1 if args.quick else 3)
    log(machine_line())
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for label, size in SIZES.items():
            write_s, (path, cuts, duration) = timed(make_video, folder, seconds, size)
            log(
                f"{label}: {path.name}, {duration:.1f} s, {size[0]}x{size[1]} @ 25 fps, {len(cuts)} cuts, "
                f"{path.stat().st_size / 2**20:.1f} MiB (written in {write_s:.1f} s)"
            )
            r = results[label] = measure(path, cuts, duration, repeat)
            log(f"  clips {r['clips']}, max cut error {r['max_cut_error_ms']:.1f} ms over {len(cuts)} cuts")
            log(f"  plan (probe+hash+transcript+scenes+clips) {r['plan_s']:6.2f} s -> {r['x_plan']:5.1f}x real time")
            log(
                f"  frames ({r['frames']} decoded)              {r['frames_s']:6.2f} s -> "
                f"{r['x_frames']:5.1f}x real time"
            )
            log(f"  plan + frames: {r['x_realtime']:5.1f}x real time (goal >= 10x at 360p)   [{machine_line()}]")
    fig, ax = figure(size=(6, 4))
    labels = list(results)
    ax.bar([i - 0.2 for i in range(len(labels))], [r["x_plan"] for r in results.values()], 0.4, label="plan")
    ax.bar(
        [i + 0.2 for i in range(len(labels))], [r["x_realtime"] for r in results.values()], 0.4, label="plan + frames"
    )
    ax.axhline(10, color="grey", linestyle=":", label="goal 10x (360p)")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel("seconds of video per wall-clock second")
    ax.legend(fontsize=8)
    save_png(fig, args.out / "video.png", title=f"Video segmentation, {seconds:.0f} s videos, best of {repeat}")
    finish(
        "video",
        {
            "x_realtime_360p": round(results["360p"]["x_realtime"], 2),
            "x_realtime_720p": round(results["720p"]["x_realtime"], 2),
            "details": {k: {m: round(v, 3) for m, v in r.items()} for k, r in results.items()},
            "seconds": seconds,
            "repeat": repeat,
        },
        args.out,
    )


if __name__ == "__main__":
    main()
