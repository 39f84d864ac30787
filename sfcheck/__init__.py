"""sfcheck: validate, dump and fuzz SFrame stack-trace sections."""

__version__ = "0.1.0"
