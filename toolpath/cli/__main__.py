from toolpath.cli import main

main()
