"""Video segmentation speed: seconds of 360p video planned per wall-clock second (goal: >= 10x real time).

Writes a ~2-minute 640x360 25 fps H.264 video (scikit-image photographs, each held 4-12 s with a slow
pan and per-frame noise so decoding costs what real footage costs) with a sidecar .srt, then times:

* ``plan``   probe (SHA-256, header, first and last frames) + transcript + PySceneDetect + clip shaping,
             i.e. everything ``plan_video`` does without ASR;
* ``frames`` decoding the planned frames (8 per clip, 32 per video) with ``iter_frames``.

Run: ``python benchmarks/video_ingest.py [--seconds 120] [--repeat 3] [--keep DIR]``. Prints the best
of ``--repeat`` runs, the detected cut error against the true cuts, and the real-time ratios.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for support.video

from support.video import write_video
from universalrag.ingest.video import VideoOptions, iter_frames, plan_video

PHOTOS = ["astronaut", "coffee", "rocket", "camera", "chelsea", "hubble_deep_field", "immunohistochemistry",
          "retina"]


def make_video(folder: Path, seconds: float) -> tuple[Path, list[float], float]:
    """Write the benchmark video; returns its path, true cut times and duration."""
    rng = random.Random(1)
    scenes, total = [], 0.0
    while total < seconds:
        hold = min(rng.uniform(4, 12), max(1.0, seconds - total))
        scenes.append((PHOTOS[len(scenes) % len(PHOTOS)], hold))
        total += hold
    cues = [(s + 0.5, s + 3.0, f"Scene {i} narration.") for i, s in enumerate([0.0, *[
        sum(h for _n, h in scenes[:k]) for k in range(1, len(scenes))]])]
    written = write_video(folder / "bench360p.mp4", scenes, fps=25, size=(640, 360), motion=20, noise=6,
                          gop=50, cues=cues, sidecar="srt", audio="tones")
    return written.path, written.cut_times, written.duration_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="length of the generated video")
    parser.add_argument("--repeat", type=int, default=3, help="runs to take the best of")
    parser.add_argument("--keep", type=Path, default=None, help="write the video here instead of a temp dir")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        path, cuts, duration = make_video(folder, args.seconds)
        print(f"video: {path.name}, {duration:.1f} s, 640x360 @ 25 fps, {len(cuts)} cuts, "
              f"{path.stat().st_size / 2**20:.1f} MiB (written in {time.perf_counter() - t0:.1f} s)")

        options = VideoOptions(min_clip_s=2.0, max_clip_s=180.0)
        plan_times, frame_times_ = [], []
        plan = None
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            plan = plan_video(path, options=options)
            plan_times.append(time.perf_counter() - t0)
            times = [t for clip in plan.clips for t in clip.frame_times] + list(plan.video_frame_times)
            t0 = time.perf_counter()
            n_frames = sum(1 for _ in iter_frames(path, times))
            frame_times_.append(time.perf_counter() - t0)
        assert plan is not None

        found = [clip.start_s for clip in plan.clips[1:]]
        errors = [min(abs(f - c) for f in found) for c in cuts] if found else []
        plan_s, frames_s = min(plan_times), min(frame_times_)
        print(f"clips: {len(plan.clips)} (transcript from {plan.transcript_source}); "
              f"max cut error {max(errors, default=0.0) * 1000:.1f} ms over {len(cuts)} cuts")
        print(f"plan   (probe+hash+transcript+scenes+clips): {plan_s:6.2f} s wall -> "
              f"{duration / plan_s:5.1f}x real time")
        print(f"frames ({n_frames} decoded with iter_frames):      {frames_s:6.2f} s wall -> "
              f"{duration / frames_s:5.1f}x real time")
        total = plan_s + frames_s
        print(f"plan + frames:                               {total:6.2f} s wall -> "
              f"{duration / total:5.1f}x real time (goal >= 10x)")


if __name__ == "__main__":
    main()
