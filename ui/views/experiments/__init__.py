"""The view side of each experiment folder: ``ui/views/experiments/<name>.py`` draws what ``gpu/experiments/<name>/``
measures (its live run, its downloads, and ``recorded(ref)``, the "On a real GPU" panel its page hands to
``ui.reference``). The engine never imports these; a page imports its folder's view."""
