from referee.services.cli.main import main

raise SystemExit(main())
