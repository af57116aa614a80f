"""``python -m nisse_llm``: the ``nisse-llm`` command."""

from nisse_llm.cli.main import main

raise SystemExit(main())
