"""Renderers of one result model (sfcheck.result.Result): text, JSON, SARIF, JUnit."""

FORMATS = ("text", "json", "sarif", "junit")
