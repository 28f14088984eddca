"""What a reader sees, written from the code and the recorded runs: the
README's tables and sample output, docs/current-figures.md, and the figures
the notebook's prose quotes. ``scripts/generate_pages.py`` writes them;
``tests/pages/`` fails when a committed page differs from what it writes.

A generated part of a page sits between ``<!-- generated:NAME -->`` and
``<!-- /generated -->`` (:mod:`.markers`); each NAME is one function of a page's
blocks (:mod:`.documents` lists the pages and their blocks).
"""
