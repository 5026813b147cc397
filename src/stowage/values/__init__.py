"""Typed values read from configuration, below ``config`` so that the service's settings
and each provider's settings share them: the one coercion engine (``coerce.py``) and the
providers' typed settings (``storage.py``)."""
