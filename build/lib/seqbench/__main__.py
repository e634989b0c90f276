"""`python -m seqbench <command> ...`: the same as the `seqbench` console script."""
import sys

from seqbench.commands import main

sys.exit(main())
