"""Vector add, the article's experiment: its declaration and run (``experiment``), the article's own
method (``article``), its prose (``report``) and its page's view (``view``). Its kernel and timers are
shared with Scaling, Transfers and Launch config, in gpu/kernels/."""
