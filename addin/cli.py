"""The add-in subcommands of `flopsheet`: `addin install`, `addin lite` and `serve`.

Only argparse here: the run functions import xlwings (and the server) when they run, so
`flopsheet calc` and the engine never import them.
"""


def _run_install(args) -> int:
    from . import classic
    return classic.install(dry_run=args.dry_run)


def _run_lite(args) -> int:
    from . import lite
    return lite.write(args.out, wheel_url=args.wheel_url, build=not args.no_wheel, force=args.force)


def _run_serve(args) -> int:
    from . import server
    return server.serve(host=args.host, port=args.port, project_dir=args.project_dir, log_level=args.log_level,
                        workers=args.workers, ssl_certfile=args.ssl_certfile, ssl_keyfile=args.ssl_keyfile,
                        max_request_mb=args.max_request_mb,
                        limits={"FLOPSHEET_MAX_CELLS": args.max_cells, "FLOPSHEET_CALL_SECONDS": args.call_seconds,
                                "FLOPSHEET_HEADER_TIMEOUT_S": args.header_timeout,
                                "FLOPSHEET_BODY_TIMEOUT_S": args.body_timeout,
                                "FLOPSHEET_MAX_CONNECTIONS": args.max_connections})


def _positive(kind, most: float):
    """An argparse type: a number above 0 and at most `most`."""
    def read(text: str):
        import argparse
        try:
            value = kind(text)
        except ValueError:
            value = -1
        if not 0 < value <= most:
            raise argparse.ArgumentTypeError(f"must be a number above 0 and at most {most:g}, got {text[:20]!r}")
        return value
    return read


def _wheel_url(text: str) -> str:
    import argparse

    from .lite import wheel_url_problem
    problem = wheel_url_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def _positive_mb(text: str) -> float:
    import argparse
    try:
        mb = float(text)
    except ValueError:
        mb = -1.0
    if not 0 < mb <= 1024:
        raise argparse.ArgumentTypeError(f"must be a number of MB above 0 and at most 1024, got {text[:20]!r}")
    return mb


def add(sub) -> None:
    addin = sub.add_parser("addin", help="install the Excel add-in (classic, Windows) or write the xlwings Lite files")
    addin_sub = addin.add_subparsers(dest="addin_command", required=True)
    install = addin_sub.add_parser("install", help="classic xlwings add-in for desktop Excel on Windows")
    install.add_argument("--dry-run", action="store_true", help="show what would be set, change nothing")
    install.set_defaults(run=_run_install)
    lite = addin_sub.add_parser("lite", help="write main.py and requirements.txt for xlwings Lite (by default a "
                                             "main.py that carries Flopsheet: nothing to host)")
    lite.add_argument("--out", required=True, help="folder to write into")
    lite.add_argument("--wheel-url", type=_wheel_url, help="instead: install Flopsheet from its wheel at this HTTPS URL (goes in "
                                          "requirements.txt; the wheel is built into --out for upload)")
    lite.add_argument("--no-wheel", action="store_true", help="with --wheel-url: do not build the wheel")
    lite.add_argument("--force", action="store_true", help="overwrite main.py, requirements.txt (and the wheel) "
                                                           "already in --out")
    lite.set_defaults(run=_run_lite)

    serve = sub.add_parser("serve", help="run xlwings Server with Flopsheet's functions (needs XLWINGS_LICENSE_KEY)")
    serve.add_argument("--max-request-mb", type=_positive_mb, default=None,
                       help="refuse larger requests with 413 (default 8 MB: a 600x1000 range is about 4 MB)")
    serve.add_argument("--max-cells", type=_positive(int, 1e8), default=None,
                       help="refuse calls whose ranges make more result cells (default 1,000,000)")
    serve.add_argument("--call-seconds", type=_positive(float, 3600), default=None,
                       help="stop a call still computing after this many seconds (default 30)")
    serve.add_argument("--header-timeout", type=_positive(float, 3600), default=None,
                       help="close a connection whose request headers take longer (default 10 s)")
    serve.add_argument("--body-timeout", type=_positive(float, 3600), default=None,
                       help="answer 408 to a request whose body takes longer (default 60 s)")
    serve.add_argument("--max-connections", type=_positive(int, 1e6), default=None,
                       help="answer 503 to connections beyond this many open ones (default 1000)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--project-dir", help="use this xlwings Server project folder instead of a generated one")
    serve.add_argument("--log-level", default="warning", help="uvicorn log level")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1; about one per CPU core)")
    serve.add_argument("--ssl-certfile", help="serve HTTPS with this certificate (PEM; the full chain)")
    serve.add_argument("--ssl-keyfile", help="private key of --ssl-certfile (PEM)")
    serve.set_defaults(run=_run_serve)
