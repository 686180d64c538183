"""`mirrorline setup`: fetch the jars Mirrorline does not ship, once, into the jar cache."""

from __future__ import annotations

import json

import typer
from rich.console import Console

from mirrorline import devlatency, jar_fetch, jvm
from mirrorline.engine import class_archive

out = Console()
err = Console(stderr=True)


def setup(
    as_json: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
    java_plugins: bool = typer.Option(
        False,
        "--java-plugins",
        help="Also fetch MirrorMaker 2's interfaces, for files naming Java classes of their own.",
    ),
    wan_link: bool = typer.Option(
        False,
        "--wan-link",
        help="Also build Toxiproxy (needs Go), the proxy that simulates a wide-area link.",
    ),
) -> None:
    """Fetch Spark's Kafka connector and a Kafka broker from Maven Central into the jar cache.

    With --java-plugins, also MirrorMaker 2's interfaces, which files naming Java
    classes of their own need (else fetched when such a file is first read). With
    --wan-link, also the Toxiproxy server that simulates a wide-area link
    (`mirrorline.devlatency`), built with Go into the cache's `tools` directory.
    It also builds the driver's class archive (Spark's classes, which a driver's JVM
    then maps instead of loading them: a faster start; see `engine.class_archive`).
    The driver and `dev up` fetch what they miss by themselves on first use; run this
    ahead (a host image, a deployment step) or on a host that reaches Maven Central,
    then copy the cache to offline hosts and point --jvm-lib or $MIRRORLINE_JVM_LIB at
    it. The cache: $MIRRORLINE_JVM_LIB, else $XDG_CACHE_HOME/mirrorline/jvm (here
    shown at the end). A mirror of Maven Central: $MIRRORLINE_MAVEN_REPOSITORY.
    """
    cache = jvm.jar_cache_dir()
    progress = None if as_json else _progress
    sets: dict[str, dict[str, object]] = {}
    try:
        writer = jvm.writer_jar()
        wanted = jar_fetch.FETCHABLE if java_plugins else jar_fetch.JAR_SETS
        for name in wanted:
            fetched = jar_fetch.ensure(name, cache, progress)
            sets[name] = {
                "coordinates": list(jar_fetch.jar_set(name).coordinates),
                "jars": len(fetched),
                "directory": str(cache / name),
            }
        archive = class_archive.build(progress)
        link = str(devlatency.binary(progress)) if wan_link else None
    except (jvm.JvmSetupError, devlatency.LinkError) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
    if as_json:
        document = {"jar_cache": str(cache), "writer": str(writer), "sets": sets}
        typer.echo(json.dumps({**document, "class_archive": str(archive), "wan_link": link}))
        return
    out.print(f"writer: {writer}", highlight=False, soft_wrap=True)
    for name, entry in sets.items():
        out.print(
            f"{name}: {entry['jars']} jars in {entry['directory']}", highlight=False, soft_wrap=True
        )
    out.print(f"class archive: {archive}", highlight=False, soft_wrap=True)
    if link:
        out.print(f"wan link: {link}", highlight=False, soft_wrap=True)
    out.print("ready: the driver and dev clusters find their jars here", highlight=False)


def _progress(message: str) -> None:
    err.print(f"[dim]{message}[/dim]", highlight=False, soft_wrap=True)
