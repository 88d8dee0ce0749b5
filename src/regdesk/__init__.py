"""regdesk: registration service and OAuth 2.0 provider for fan conventions."""

from importlib.metadata import version

__version__ = version("regdesk")
