"""The invariance report card at a given size (default: `default`, the setting `invariances-measure` uses): an untrained
torchvision ResNet-18 saved to a file, measured twice, first with an empty cache (the rendered sets are built) and then
with them cached; beside it, the throughput of a plain ResNet-18 forward pass at the card's image size in the same run,
so that a figure from a loaded machine can be read as a multiple of what the network alone costs.

    PYTHONPATH=. python bench/bench_card.py [--size default|tiny] [--threads N] [--warm-only]
"""
import argparse, json, os, shutil, tempfile, time
from pathlib import Path


def forward_rate(size: int, batch: int = 128, repeats: int = 5) -> float:
    "Images/s of torchvision ResNet-18 (fc removed) inference at `size` px, float32 channels_last, as the card runs it."
    import torch, torchvision
    net = torchvision.models.resnet18().eval().to(memory_format=torch.channels_last); net.fc = torch.nn.Identity()
    x = torch.rand(batch, 3, size, size).contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():
        net(x); t = time.perf_counter()
        for _ in range(repeats): net(x)
    return repeats * batch / (time.perf_counter() - t)


def images_through_network(cfg) -> int:
    "How many images one card passes through the network (rendered data only)."
    from invariances.data.synthetic import TRAJECTORY_FAMILIES, TRANSFORM_KINDS
    from invariances.evaluation.card import POLICY_VIEWS
    from invariances.transforms import TRANSFORMS, get_transform
    synthetic = cfg.n_images * sum(len(get_transform(t).grid(cfg.n_params)) for t in TRANSFORMS)
    analogue = sum(cfg.n_groups * (2 if k == "stereo" else cfg.group_length) for k in TRANSFORM_KINDS)
    return (cfg.n_reference + cfg.n_images + synthetic + analogue + len(TRAJECTORY_FAMILIES) * cfg.n_trajectories * 8
            + len(POLICY_VIEWS) * cfg.n_spread * cfg.n_views)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="default")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--warm-only", action="store_true", help="use the usual cache (no cold run)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_card_"))
    if not a.warm_only: os.environ["INVARIANCES_CACHE"] = str(tmp / "cache")
    os.environ.pop("INVARIANCES_DATA", None)                       # the embedded rendered data only
    import torch, torchvision
    from invariances.evaluation.card import get_size, write_card
    if a.threads: torch.set_num_threads(a.threads)
    cfg = get_size(a.size)
    torch.manual_seed(0)
    torch.save(torchvision.models.resnet18().state_dict(), tmp / "resnet18.pt")
    try:
        runs = []
        for label in (["warm"] if a.warm_only else ["cold (renders the sets)", "warm (sets cached)"]):
            t = time.perf_counter()
            paths = write_card("resnet18", tmp / "card", cfg, weights=tmp / "resnet18.pt", progress=False)
            runs.append((label, time.perf_counter() - t, json.loads(paths["json"].read_text())["info"]["seconds"]))
        rate = forward_rate(cfg.image_size, cfg.batch_size)
        print(f"card size {a.size!r}: {cfg}")
        print(f"torch threads {torch.get_num_threads()}, cpu count {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
        for label, total, parts in runs:
            print(f"  {label:26s} {total:7.1f} s  ({', '.join(f'{k} {v:.1f}' for k, v in parts.items())})")
        n = images_through_network(cfg)
        print(f"  plain ResNet-18 forward at {cfg.image_size} px: {rate:.0f} img/s in the same run; the card passes {n:,} images, "
              f"{n / rate:.1f} s of forward passes: warm card / forward = {runs[-1][1] / (n / rate):.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
