import sys

try:
    from app.cli import main
except KeyboardInterrupt:  # Ctrl+C while Python starts: no traceback (app.cli.main says the same later on)
    print("interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
