"""Scaling, vector add across sizes: the sweep's settings (``config``), its run and declaration
(``experiment``), its result (``result``), its prose (``report``), its ``gpu check`` section (``check``),
its chart builders (``charts``) and its page's view (``view``)."""
