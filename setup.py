"""Packaging driven by settings.ini (the nbdev 2 source of truth), without pkg_resources."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

here = Path(__file__).parent
cfg = ConfigParser(delimiters=["="])
cfg.read(here / "settings.ini", encoding="utf-8")
cfg = cfg["DEFAULT"]

readme = here / "README.md"
setuptools.setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    long_description=readme.read_text(encoding="utf-8") if readme.exists() else "",
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    license="Apache-2.0",
    url=cfg["git_url"],
    keywords=cfg["keywords"].split(),
    python_requires=f">={cfg['min_python']}",
    # the dataset manifests live at the top of the repository and ship inside the package
    packages=setuptools.find_packages(include=[cfg["lib_path"], cfg["lib_path"] + ".*"]) + ["invariances.data_manifests"],
    package_dir={"invariances.data_manifests": "data_manifests"},
    package_data={"invariances.data_manifests": ["*.yaml"]},
    include_package_data=True,
    install_requires=cfg["requirements"].split(),
    extras_require={"dev": cfg.get("dev_requirements", "").split()},
    entry_points={
        "console_scripts": cfg.get("console_scripts", "").split(),
        "nbdev": [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"],
    },
    zip_safe=False,
)
