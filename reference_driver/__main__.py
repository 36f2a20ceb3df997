"""Reference GPU DRA driver entry point."""
import sys


def main() -> int:
    print("reference driver: not built yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
