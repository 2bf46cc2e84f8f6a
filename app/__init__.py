"""Ferry (distribution ``labferry``): a transfer manager for long fat networks."""

__version__ = "0.1.0"
