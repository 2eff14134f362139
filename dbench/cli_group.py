"""The typer group behind `dbench`: a bad option is one line naming it and the help to read (exit 2, as
every other bad input), and help shows no Python type as a placeholder (typer prints `<bool>` beside
`--quick` and `--help`, as if they took a value, and `<list[Path]>` beside an argument)."""

from __future__ import annotations

import errno
import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from dbench.foreign_flags import foreign_hint

try:  # typer vendors click from 0.2x on
    from typer import _click as click
    from typer.exceptions import Abort
except ImportError:  # pragma: no cover (older typer, with click installed beside it)
    import click  # type: ignore[no-redef]
    from click.exceptions import Abort  # type: ignore[no-redef]


PATH_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ENAMETOOLONG,
        errno.EACCES,
        errno.EPERM,
        errno.ELOOP,
        errno.EROFS,
        errno.EEXIST,
    }
)
"""OSErrors about a path the command line gave (not there, too long, not allowed...): bad input."""


def path_error(error: OSError) -> str | None:
    """The one line for an OSError about a named path, or None for any other OSError (a bug to show)."""
    if error.filename is None or error.errno not in PATH_ERRNOS:
        return None
    return f"{error.filename}: {error.strerror}; check the path given on the command line"


def error_line(message: str) -> None:
    """`error: <message>` in bold red on stderr, on one line whatever the terminal's width."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def _readable_placeholders(command: click.Command, context: click.Context) -> None:
    """Flags take no value, so their help shows none (`--help` included: typer makes it lazily); an
    argument named by its metavar (RUN-A) shows no Python type (`<str>`, `<list[Path]>`) beside it."""
    for param in [*command.params, command.get_help_option(context)]:
        if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        elif getattr(param, "param_type_name", "") == "argument" and param.metavar:
            param.display_type_rich = lambda ctx: None  # the name column already shows the metavar


def _own_options(context: click.Context | None) -> set[str]:
    """Every option name of the command a usage error is about (none when it is not known)."""
    if context is None:
        return set()
    return {name for param in context.command.params for name in (*param.opts, *param.secondary_opts)}


def _repeated_option(group: TyperGroup, args: list[str], prog_name: str) -> click.exceptions.UsageError | None:
    """A single-valued option given twice (`--runtime ort-cpu --runtime openvino`), which click would
    settle by keeping the last without a word; None when there is none."""
    command = group.commands.get(args[0]) if args else None
    if command is None or hasattr(command, "commands"):  # a sub-group: its own commands parse the rest
        return None
    single = {
        name: param
        for param in command.params
        if param.param_type_name == "option" and not (param.multiple or param.is_flag or param.count)
        for name in (*param.opts, *param.secondary_opts)
    }
    seen: dict[str, str] = {}
    for token in args[1:]:
        if token == "--":
            break
        name = token.split("=", 1)[0]
        if (param := single.get(name)) is None:
            continue
        if param.name in seen:
            several = (
                f" (several values are comma-separated: {param.opts[0]} A,B)" if "," in (param.metavar or "") else ""
            )
            context = click.Context(command, info_name=args[0], parent=click.Context(group, info_name=prog_name))
            spelled = f" (as {seen[param.name]} and {name})" if seen[param.name] != name else ""
            return click.exceptions.UsageError(
                f"{param.opts[0]} was given twice{spelled}: give it once{several}", ctx=context
            )
        seen[param.name] = name
    return None


class DbenchGroup(TyperGroup):
    """Usage errors as one line; flags without placeholders; a single-valued option given twice refused."""

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        for name, command in [("", self), *self.commands.items()]:
            _readable_placeholders(command, click.Context(command, info_name=name or prog_name))
        argv = list(sys.argv[1:] if args is None else args)
        try:
            if repeated := _repeated_option(self, argv, prog_name or "dbench"):
                raise repeated
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.ClickException as error:  # an unknown option, a value of the wrong type...
            if not standalone_mode:
                raise
            context = getattr(error, "ctx", None)
            where = context.command_path if context else "dbench"
            hint = foreign_hint(argv, _own_options(context))
            error_line(f"{error.format_message().rstrip('.')}; see {where} --help" + (f"; {hint}" if hint else ""))
            sys.exit(error.exit_code)
        except Abort:  # end of input at a prompt
            if not standalone_mode:
                raise
            error_line("aborted")
            sys.exit(1)
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def given(text: str) -> str:
    """typer parser of a text option: the value as typed; an empty one is refused, since it would silently
    mean the default (`--suite ''`) or nothing at all."""
    if isinstance(text, str) and not text.strip():
        raise typer.BadParameter("is empty; give a value, or leave the option out")
    return text


def given_path(text: str | Path) -> Path:
    """typer parser of a path option: an empty one is refused (typer reads '' as '.', the current folder)."""
    return Path(given(text)) if isinstance(text, str) else text
