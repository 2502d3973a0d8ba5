# Dataset manifests (YAML). Installed as the package `invariances.data_manifests`; read by invariances.data.manifests.
