"""Stowage: self-hostable file storage that speaks the Filestack File API."""

__version__ = "0.1.0"
