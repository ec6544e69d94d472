"""Streamlit helpers shared by the pages: the frame, charts, widgets and the GPU queue."""
