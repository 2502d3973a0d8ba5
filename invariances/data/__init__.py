"""Data: the `ImageSet` contract, the renderer and its synthetic sets, and real datasets in their official layouts.

Import layers (an intent, not enforced): a module imports only from the modules named after its arrow, never from one
that imports it, so the graph stays acyclic.

    imageset                         the data contract                            <- core
    render                           the renderer (pure torch)                    <- (no data module)
    manifests                        manifests, DatasetError, dataset_dir, ...    <- core
    cache                            decode_images, the image-array cache         <- manifests, imageset, core
    synthetic                        the rendered sets (cached by `cache`)        <- render, imageset, cache, core, policies
    loading                          helpers every real-dataset loader shares     <- cache, manifests, imageset
    classification, objects,         loaders by kind                              <- loading, cache, manifests, imageset
      landmarks, video, pairs,         (scenes also <- video, for mask_boxes)
      scenes
    loaders                          LOADERS / dataset_loader(name)               <- every loader module, manifests
    fixtures                         fabricated official layouts for tests        <- manifests, classification
                                                                                     (CIFAR10_CLASSES), pairs (EXPOSURE_LEVELS)

Outside this package, `invariances.evaluation.tasks` (downstream tasks) imports classification, landmarks and imageset;
nothing here imports from evaluation, training, the zoo or the runner.
"""
