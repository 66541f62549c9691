import sys

from ragcore.cli import main

sys.exit(main())
