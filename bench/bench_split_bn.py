"""What MoCo's split BatchNorm costs in each memory format: the `cpu` recipe's backbone, forward + backward, with plain
BatchNorm and with `models.SplitBatchNorm` (MoCo-v2's shuffled BN on one device), NCHW and channels_last, in one run.

    PYTHONPATH=. python bench/bench_split_bn.py [--steps 8] [--threads 2] [--runtime auto|fp32|bf16]

Why: on CPUs whose convolutions prefer channels_last (oneDNN with AMX, say), a plain ResNet runs faster in that layout,
yet `Runtime.detect` and `bench_peer_lightly.py --levers` find the MoCo step slower in it. SplitBatchNorm normalises
interleaved sub-batches by reshaping (N, C, H, W) to (N/s, s*C, H, W), which no channels_last tensor can be viewed as,
so every BN layer copies the activation to NCHW and the next convolution copies it back. Also timed, a prototype that
is not the library's: the same statistics from s contiguous sub-batches, each normalised by the native kernel in
channels_last and concatenated ("chunks"; contiguous rather than interleaved groups, so not the same bits).

Reported: images/s (CPU time x threads; wall in parentheses) of each variant, median of `--steps` alternating steps
after a warm-up round, and each as a ratio to the library's path (split BN, NCHW).
"""
import argparse
from functools import partial

import torch
import torch.nn.functional as F

from _timing import alternating_medians
from invariances.models import BackboneConfig, Encoder, SplitBatchNorm
from invariances.profiles import get_profile
from invariances.runtime import CPU_RUNTIMES, Runtime
from invariances.train.moco import MocoConfig


class ChunkedSplitBatchNorm(SplitBatchNorm):
    "Prototype: `num_splits` contiguous sub-batches, each through the native kernel (which keeps channels_last), then concatenated."
    def forward(self, x):
        if not self.training or self.num_splits == 1: return super().forward(x)
        return torch.cat([F.batch_norm(c, None, None, self.weight, self.bias, True, 0.0, self.eps) for c in x.chunk(self.num_splits)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8); ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runtime", default="auto", choices=["auto", "fp32", "bf16"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = MocoConfig.from_profile(get_profile("cpu"))
    amp = Runtime.detect().amp_dtype if a.runtime == "auto" else CPU_RUNTIMES[a.runtime][0]
    print(f"the cpu recipe's backbone: {cfg.arch} at width {cfg.width}, {cfg.image_size} px, batch {cfg.batch_size}, "
          f"bn_splits {cfg.bn_splits}; autocast {amp or 'none (fp32)'}; {a.threads} threads, torch {torch.__version__}")
    norms = {"plain BN": None, "split BN": partial(SplitBatchNorm, num_splits=cfg.bn_splits),
             "split BN, chunks (prototype)": partial(ChunkedSplitBatchNorm, num_splits=cfg.bn_splits)}
    x = torch.rand(cfg.batch_size, 3, cfg.image_size, cfg.image_size)
    cases = {}
    for norm_name, norm in norms.items():
        for layout in ("NCHW", "channels_last"):
            torch.manual_seed(0)
            net = Encoder(BackboneConfig(cfg.arch, cfg.width, cfg.small_stem), norm_layer=norm).train()
            xi = x
            if layout == "channels_last":
                net, xi = net.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
            def step(net=net, xi=xi):
                with torch.autocast("cpu", dtype=amp, enabled=amp is not None):
                    out = net(xi)
                out.float().square().mean().backward()
                net.zero_grad(set_to_none=True)
            cases[f"{norm_name}, {layout}"] = step
    cpu, wall = alternating_medians(cases, a.steps)
    base = "split BN, NCHW"
    for k in cases:
        print(f"  {k:42s} {a.threads * cfg.batch_size / cpu[k]:8.1f} img/s (wall {cfg.batch_size / wall[k]:8.1f})   "
              f"vs the library's path (split BN, NCHW): {cpu[base] / cpu[k]:.2f}x CPU, {wall[base] / wall[k]:.2f}x wall")


if __name__ == "__main__":
    main()
