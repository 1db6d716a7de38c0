"""Tournament formats: who plays whom, in which seats, with which seed."""
