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
