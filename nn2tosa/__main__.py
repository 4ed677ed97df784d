from nn2tosa.cli import main

raise SystemExit(main())
