"""Launch config, the Launch config page's three experiments: the block-size sweep (``experiment``), how
threads find their element (``indexing``) and what a launch costs (``overhead``), with their prose
(``report``), chart builders (``charts``) and the page's view (``view``)."""
