"""Moving files in (import), between backends (migrate), and backups (docs/operations.md)."""
