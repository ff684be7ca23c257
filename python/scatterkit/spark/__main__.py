"""``python -m scatterkit.spark``: the same as the ``scatterkit-spark`` command.

Also the file to hand to ``spark-submit`` (cluster deploy mode), e.g.
``spark-submit --archives env.tar.gz#environment .../scatterkit/spark/__main__.py run ...``.
"""

import sys

from scatterkit.spark.cli import main

if __name__ == "__main__":
    sys.exit(main())
