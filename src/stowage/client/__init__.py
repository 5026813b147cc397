"""A client for a Stowage server: the ``stowage upload/download/meta/rm/overwrite/ls``
commands. Files are streamed in both directions; large uploads use the resumable
multipart protocol (``/multipart/*``) and remember finished parts on disk."""
