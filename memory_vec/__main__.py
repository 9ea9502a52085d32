from memory_vec._cli.main import main

raise SystemExit(main())
