"""Transfers, the Transfers page's two experiments: copy bandwidth by size (``bandwidth``) and the
strategies that hide or avoid copies (``experiment``, timed by ``strategy_timing``), with their prose
(``report``), ``gpu check`` section (``check``), chart builders (``charts``) and the page's view (``view``)."""
