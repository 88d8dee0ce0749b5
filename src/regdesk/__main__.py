from regdesk.cli import main

main()
