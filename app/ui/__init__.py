"""The Qt window (PySide6): the only part of Ferry that imports Qt; it reaches the engine through ``bridge``."""
