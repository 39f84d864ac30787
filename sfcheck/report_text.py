"""Kept for imports that predate sfcheck.report: the text renderer lives in report/text.py."""

from .report.text import render_file

__all__ = ["render_file"]
