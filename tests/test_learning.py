"""The guard issue 14 asked for: a model trained with the `cpu` recipe must read out better than the untrained network.

The first `cpu` MoCo models classified held-out objects worse by k-NN than their untrained initialisation while their
training logs looked busy (a contrastive accuracy that rose and fell): nothing but a held-out readout would have
caught it. This test trains MoCo-v2 (Default policy) with the `cpu` profile's own recipe, exactly as the zoo does,
and compares its held-out k-NN accuracy with the same network before training (`evaluation.recipe.recipe_run`; the
record is cached, so a warm cache costs nothing). It takes a few minutes on 2 cores: marked slow, run by `make test`.
"""
import pytest


@pytest.mark.slow
def test_cpu_recipe_beats_the_untrained_network():
    from invariances.evaluation.recipe import recipe_run
    r = recipe_run("profile", "cpu", {}, evaluations=1)
    curve = [c["knn_accuracy"] for c in r["curve"]]
    assert len(curve) == 2 and curve[-1] == r["knn_accuracy"]
    # the chosen recipe measured +0.10 over its untrained network (0.30 vs 0.20); runs of one config vary by about 0.03
    assert r["knn_accuracy"] > r["untrained_knn_accuracy"] + 0.04, (
        f"the cpu recipe's MoCo reads out barely better than its untrained network: {r['knn_accuracy']:.3f} vs "
        f"{r['untrained_knn_accuracy']:.3f} (held-out k-NN accuracy; at least +0.04 expected); training no longer learns")
    assert r["final_loss"] < r["chance_loss"], "the contrastive loss did not fall below chance"
