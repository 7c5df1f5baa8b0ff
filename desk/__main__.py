from desk.cli import main

main()
