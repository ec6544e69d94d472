"""Custom Streamlit components (each builds its frontend with the Makefile)."""
