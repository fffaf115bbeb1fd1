"""Entry point for ``python -m marketsim``."""

from marketsim.cli import main

raise SystemExit(main())
