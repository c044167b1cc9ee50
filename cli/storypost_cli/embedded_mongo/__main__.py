"""`python -m storypost_cli.embedded_mongo --path FILE --port P` (the dev stack's launcher)."""

from storypost_cli.embedded_mongo.server import main

raise SystemExit(main())
