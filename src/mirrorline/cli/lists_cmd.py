"""`mirrorline topics` and `mirrorline groups`: a flow's allow and deny lists, at run time.

The changes are control records on the flow's target (`control.flow_control`):
running drivers apply them within about a second, without a restart, and a
driver that starts later applies them before replicating. The effective list
is the configuration's list without the removed patterns, plus the added ones;
a name is replicated when it matches the effective allow list and not the
effective deny list (`--exclude`). Topics already replicated are never copied
again: a topic allowed anew resumes from the flow's progress, or starts at
`start.position` when it has none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from mirrorline.cli.flow_args import (
    ConfigOption,
    FlowTarget,
    JsonOption,
    SourceOption,
    TargetOption,
    TimeoutOption,
    emit_json,
    failures,
    flow_target,
    say,
)
from mirrorline.control.flow_control import LISTS, FlowControl, ListName
from mirrorline.filters import FilterPatternError, NameFilter
from mirrorline.java_classes import is_java, shown_class
from mirrorline.operations.failure import EXIT_USAGE, Failure

AddOption = Annotated[
    list[str] | None,
    typer.Option("--add", help="Add a pattern (a regular expression; repeat for more)."),
]
RemoveOption = Annotated[
    list[str] | None,
    typer.Option("--remove", help="Remove a pattern (repeat for more)."),
]
ListOption = Annotated[bool, typer.Option("--list", help="Show the lists; change nothing.")]
ExcludeOption = Annotated[
    bool, typer.Option("--exclude", help="Change the deny list instead of the allow list.")
]


def _list_command(kind: str, doc: str) -> Callable[..., None]:
    """The command changing the flow's `kind` lists (`topics` or `groups`)."""

    def command(
        config: ConfigOption,
        source: SourceOption,
        target: TargetOption,
        add: AddOption = None,
        remove: RemoveOption = None,
        show: ListOption = False,
        exclude: ExcludeOption = False,
        as_json: JsonOption = False,
        timeout: TimeoutOption = 30.0,
    ) -> None:
        _change(kind, config, source, target, add, remove, show, exclude, as_json, timeout)

    command.__name__ = kind
    command.__doc__ = doc
    return command


topics = _list_command(
    "topics",
    """Change or show which topics the flow SOURCE->TARGET replicates, while it runs.

    Give --add, --remove (each repeatable) or --list. Patterns are regular
    expressions matching whole topic names, as in the `topics` setting;
    --exclude works on the deny list (`topics.exclude`). Removing a pattern the
    file sets hides it; adding it again brings it back.

    \b
    Examples:
      mirrorline topics -c mm2.properties -s east -t west --add 'orders.*'
      mirrorline topics -c mm2.properties -s east -t west --exclude --add orders.audit
      mirrorline topics -c mm2.properties -s east -t west --list --json
    """,
)
groups = _list_command(
    "groups",
    """Change or show which consumer groups the flow SOURCE->TARGET checkpoints, while it runs.

    Give --add, --remove (each repeatable) or --list; --exclude works on the
    deny list (`groups.exclude`). Patterns are regular expressions matching
    whole group names, as in the `groups` setting.

    \b
    Examples:
      mirrorline groups -c mm2.properties -s east -t west --add 'billing-.*'
      mirrorline groups -c mm2.properties -s east -t west --list
    """,
)


def _change(
    kind: str,
    config: ConfigOption,
    source: str,
    target: str,
    add: list[str] | None,
    remove: list[str] | None,
    show: bool,
    exclude: bool,
    as_json: bool,
    timeout: float,
) -> None:
    name: ListName = f"{kind}.exclude" if exclude else kind  # type: ignore[assignment]
    with failures(as_json):
        if show == bool(add or remove):
            raise Failure("give --add or --remove patterns, or --list", EXIT_USAGE)
        for pattern in add or ():
            try:
                NameFilter(include=(pattern,))
            except FilterPatternError as exc:
                raise Failure(f"--add {pattern!r}: {exc.reason}", EXIT_USAGE) from None
        with flow_target(config, source, target) as ft:
            store = ft.control()
            try:
                if show:
                    control = store.read(ft.flow.name, timeout)
                else:
                    try:
                        control = store.change_list(
                            ft.flow, name, add=add or (), remove=remove or (), timeout=timeout
                        )
                    except ValueError as exc:
                        raise Failure(str(exc)) from None
            finally:
                store.close()
            _print(ft, kind, control, as_json, changed=not show)


def _print(ft: FlowTarget, kind: str, control: FlowControl, as_json: bool, changed: bool) -> None:
    lists = {}
    for name in LISTS:
        if name.startswith(kind):
            view = control.view(ft.flow, name)
            lists[name] = {
                "configured": list(view.configured),
                "added": list(view.added),
                "removed": list(view.removed),
                "effective": list(view.effective),
            }
    chooser = ft.flow.topic_filter if kind == "topics" else ft.flow.group_filter
    chosen_by = shown_class(chooser) if is_java(chooser) else None
    if as_json:
        emit_json({"ok": True, "flow": ft.flow.name, "lists": lists, "chosen_by": chosen_by})
    else:
        if chosen_by is not None:
            typer.echo(
                f"{ft.flow.name} {kind}: chosen by {chosen_by}; these lists hold only the "
                "entries added at run time, which apply before the class is asked"
            )
        for name, entry in lists.items():
            typer.echo(f"{ft.flow.name} {name}: {', '.join(entry['effective']) or '(nothing)'}")
            if entry["added"] or entry["removed"]:
                typer.echo(
                    f"  file: {', '.join(entry['configured']) or '(nothing)'}; "
                    f"added at run time: {', '.join(entry['added']) or '-'}; "
                    f"removed at run time: {', '.join(entry['removed']) or '-'}"
                )
    if changed:
        say(f"saved on {ft.flow.target}; running drivers of {ft.flow.name} apply it within seconds")
