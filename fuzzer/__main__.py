from fuzzer.cli import main

main()
