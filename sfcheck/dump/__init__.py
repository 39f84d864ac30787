"""Renderers of decoded SFrame sections (`sfcheck dump`)."""
