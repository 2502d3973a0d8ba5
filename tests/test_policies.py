"Integration checks of invariances.policies / invariances.transforms beyond the notebook tests."
import pytest
import torch

from invariances.policies import POLICIES, get_policy, new_generator
from invariances.train.looc import looc_views
from invariances.train.pirl import get_jigsaw
from invariances.transforms import TRANSFORMS, CORRUPTIONS, get_transform, corrupt

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
def test_views_same_on_any_device(device):
    "Parameters come from a CPU generator, so a device gives the same parameters and (up to float error) the same views."
    x = torch.rand(16, 3, 48, 48, generator=torch.Generator().manual_seed(0))
    for name in POLICIES:
        pol = get_policy(name, 32)
        v_cpu, p_cpu = pol(x, new_generator(1))
        v_dev, p_dev = pol(x.to(device), new_generator(1))
        assert v_dev.device.type == device
        for a in p_cpu:
            for k in p_cpu[a]: assert torch.equal(p_cpu[a][k], p_dev[a][k].cpu()), (name, a, k)
        torch.testing.assert_close(v_dev.cpu(), v_cpu, atol=1e-4, rtol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_eval_transforms_and_corruptions_on_device(device):
    x = torch.rand(4, 3, 32, 32, generator=torch.Generator().manual_seed(0)).to(device)
    for name in TRANSFORMS:
        t = get_transform(name)
        grid = t.grid(4)
        params = grid[torch.arange(4) % len(grid)]
        out = t.apply(x, params.to(device))
        assert out.device.type == device and out.shape == x.shape
        torch.testing.assert_close(out.cpu(), t.apply(x.cpu(), params), atol=1e-4, rtol=0)
    for names in CORRUPTIONS.values():
        for name in names:
            assert corrupt(x, name, 3, torch.Generator().manual_seed(0)).device.type == device


def test_looc_keys_rebuild_bit_for_bit():
    x = torch.rand(8, 3, 40, 40, generator=torch.Generator().manual_seed(0))
    pol = get_policy("looc_color_rotation_texture", 32)
    q, keys, p = looc_views(x, pol, generator=new_generator(0))
    assert torch.equal(pol(x, params=p["query"])[0], q)
    for k, pk in zip(keys, p["keys"]): assert torch.equal(pol(x, params=pk)[0], k)


def test_jigsaw_reproducible():
    x = torch.rand(3, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    jig = get_jigsaw(64)
    a, p = jig(x, new_generator(0))
    b, _ = jig(x, params=p)
    assert torch.equal(a, b) and a.shape == (3, 9, 3, jig.patch, jig.patch)


@pytest.mark.parametrize("device", DEVICES)
def test_policies_refuse_nonfinite_images(device):
    "Every policy, through __call__ and apply, and the LooC views, refuse NaN/inf images with the count and first image."
    x = torch.rand(6, 3, 40, 40, generator=torch.Generator().manual_seed(0)).to(device)
    x[4, 1, 2, 3] = float("nan"); x[5, 0, 0, 0] = float("inf")
    for name in POLICIES:
        pol = get_policy(name, 32)
        with pytest.raises(ValueError, match=rf"policy '{name}': the input batch of 6 images holds 2 NaN/inf values \(first in image 4"):
            pol(x, new_generator(0))
        with pytest.raises(ValueError, match="holds 2 NaN/inf values"):
            pol.apply(x, pol.sample(6, new_generator(0), 40, 40))
    with pytest.raises(ValueError, match="holds 2 NaN/inf values"):
        looc_views(x, get_policy("looc_color_rotation_texture", 32), generator=new_generator(0))


def test_posterize_grid_follows_appendix_b():
    "App. B: bits 1-7 plus the unaugmented 8-bit image (8 values, identity first); the authors' code used bits 1-7 only."
    t = get_transform("posterize")
    assert t.grid(256).tolist() == [8, 1, 2, 3, 4, 5, 6, 7] and t.grid(3).tolist() == t.grid(256).tolist()
    x = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    assert torch.equal(t.apply(x, t.identity), x)
    q = (x * 255).round()                                               # 1 bit: each channel value 0 or 128
    assert torch.equal(t.apply(x, torch.tensor(1.0)), torch.where(q >= 128, 128.0, 0.0) / 255)
