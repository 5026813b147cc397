"""Command-line handles that begin with "-".

Handles use the URL-safe alphabet, so about one in 64 begins with "-" and a parser
takes it for an option. ``HandleCommand`` lets such a handle stand where a value goes:
a word that is a whole handle (20 characters of the alphabet) and not one of the
command's own option names is a value, never an option. ``--`` before it works too.
The one ambiguity left: a short option with its value glued on (``-oNAME``) that is
itself 20 such characters is read as a handle; write ``-o NAME``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from stowage.core.names import is_handle

_MASK = "\x7fhandle:"  # starts no option; a real argument never begins with DEL


class HandleCommand(click.Command):
    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        options = {name for param in self.get_params(ctx) for name in param.opts}
        masked: list[str] = []
        for index, word in enumerate(args):
            if word == "--":
                masked.extend(args[index:])
                break
            dash_handle = word.startswith("-") and is_handle(word) and word not in options
            masked.append(_MASK + word if dash_handle else word)
        rest = super().parse_args(ctx, masked)
        ctx.params = {name: _unmask(value) for name, value in ctx.params.items()}
        return rest


def _unmask(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_MASK):
        return value[len(_MASK) :]
    if isinstance(value, Path) and str(value).startswith(_MASK):
        return Path(str(value)[len(_MASK) :])
    if isinstance(value, tuple):
        return tuple(_unmask(v) for v in value)
    return value
