"Subpackage: see the notebooks in nbs/."
