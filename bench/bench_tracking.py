"""The Region Tracker's costs (Purushwalkam & Gupta, supplement B) at the `cpu` profile's scale, in one run:

    PYTHONPATH=. python bench/bench_tracking.py [--clips 100] [--steps 6] [--threads 2]

  * proposals per second: selective search (OpenCV contrib, fast mode) on rendered 48-px frames enlarged 2x, as
    `train.tracking.TrackingConfig` makes them, in one process and in two (the zoo uses every core; the worker pool is
    started before the timing, as it is once per set in the zoo);
  * the tracking pass per frame: the tracking model's layer3 on the enlarged frames, ROI-align in every proposal, the
    matches of consecutive frames and the track scores (`region_tracks` on all the clips less their proposals' time);
(The Region Tracker's training step against MoCo-v2's is `bench_video_steps.py`: the same method as Ground-Truth
Tracks, timed on any device.)
"""
import argparse, time
import numpy as np
import torch

from invariances import zoo
from invariances.data.synthetic import video_set
from invariances.models import Encoder
from invariances.train.tracking import TrackingConfig, region_tracks, selective_search

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clips", type=int, default=100); ap.add_argument("--steps", type=int, default=6); ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(); torch.set_num_threads(a.threads)
    p = zoo.get_profile("cpu"); cfg = TrackingConfig()
    clips = video_set(n_videos=a.clips, n_frames=zoo.VIDEO_CLIP["frames"], size=p.image_size, split="test")
    print(f"{a.clips} rendered clips of {zoo.VIDEO_CLIP['frames']} frames at {p.image_size} px, proposals on frames enlarged {cfg.upscale}x")
    timed = clips.images[:16 * zoo.VIDEO_CLIP["frames"]]                  # 16 clips' frames for the rates
    selective_search(timed[:64], cfg.top, cfg.upscale, n_jobs=2)           # start the worker pool
    rate = {}
    for jobs in (1, 2):
        t = time.perf_counter(); props = selective_search(timed, cfg.top, cfg.upscale, n_jobs=jobs); rate[jobs] = len(timed) / (time.perf_counter() - t)
        print(f"  proposals, {jobs} process(es): {rate[jobs]:.1f} frames/s ({np.mean([len(b) for b in props]):.0f} proposals a frame)")
    torch.manual_seed(0)
    tracker = Encoder(zoo.model_config("video-baseline", p).backbone).eval()
    t = time.perf_counter(); pairs = region_tracks(clips, tracker, zoo.VIDEO_CLIP["gap"], cfg, n_jobs=2); total = time.perf_counter() - t
    frames = len(clips) * (zoo.VIDEO_CLIP["frames"] - 3) // zoo.VIDEO_CLIP["frames"]   # frames 0..12 of each clip carry tracks
    print(f"  region_tracks: {1000 * total / frames:.1f} ms a frame, of which the tracking pass (features, matches, scores) "
          f"{1000 * (total / frames - 1 / rate[2]):.1f} ms and the proposals {1000 / rate[2]:.1f} ms")


if __name__ == "__main__": main()
