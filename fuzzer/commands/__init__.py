"""One module per subcommand; each exports its command as ``COMMAND``
(:class:`fuzzer.commands.command.Command`)."""
