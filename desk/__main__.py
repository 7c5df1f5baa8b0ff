from desk.cli.main import main

main()
