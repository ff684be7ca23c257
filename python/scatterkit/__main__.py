"""`python -m scatterkit`: paths for C++ builds, and a demo."""

from __future__ import annotations

import argparse
import sys

from . import __version__, get_cmake_dir, get_include


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scatterkit", description=__doc__)
    parser.add_argument("--version", action="version", version=f"scatterkit {__version__}")
    parser.add_argument("--cmakedir", action="store_true", help="print the CMake package directory")
    parser.add_argument("--includedir", action="store_true", help="print the C++ include directory")
    sub = parser.add_subparsers(dest="command")
    demo = sub.add_parser("demo", help="run every operation on generated data and check it")
    demo.add_argument("--scale", type=int, default=1, help="problem size multiplier (default 1)")
    demo.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    if args.cmakedir:
        print(get_cmake_dir())
    if args.includedir:
        print(get_include())
    if args.command == "demo":
        from ._demo import run_demo

        return run_demo(scale=args.scale, seed=args.seed)
    if not (args.cmakedir or args.includedir):
        parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
