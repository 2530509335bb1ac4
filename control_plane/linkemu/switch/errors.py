"""What the P4Runtime side of the switch layer raises."""


class P4RuntimeError(RuntimeError):
    """A name the program lacks, a value its field cannot hold, or a switch
    that refused or could not be reached."""


class SwitchUnreachable(P4RuntimeError):
    """The connection to the switch broke; Switch.recover() makes it again."""
