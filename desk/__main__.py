from desk.cli.start import main

main()
